// common.cuh: small helpers every stage shares.
//
// NVRTC has no include path, so cuda_kernels/loader.py pastes this file in place of the
// `#include "common.cuh"` line (once per translation unit); nvcc sees the same pasted text.
// Nothing here may need a host header: the sources compile under NVRTC, nvcc, and the CPU
// emulator (cuda_kernels/emulator), which defines GEMM_EMULATE.
#ifndef GEMM_COMMON_CUH
#define GEMM_COMMON_CUH

#ifdef GEMM_EMULATE
#define GEMM_CHECK_ALIGNED16(p) gemm_emu_check_aligned16(p)
#else
#define GEMM_CHECK_ALIGNED16(p) ((void)0)
#endif

// 16-byte accesses go through these two so the emulator can prove every one is aligned
// (a misaligned float4 access is a fault on the GPU, silent on a CPU).
__device__ __forceinline__ float4 ld4(const float* p) {
    GEMM_CHECK_ALIGNED16(p);
    return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ void st4(float* p, float4 v) {
    GEMM_CHECK_ALIGNED16(p);
    *reinterpret_cast<float4*>(p) = v;
}

// Asynchronous global -> shared copies (sm_80+): the data goes to shared memory without
// passing through registers, so a prefetch costs no registers. src_bytes = 0 writes zeros (the
// source is not read): that is how tiles past the matrix edge are zero filled.
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) {
#ifdef GEMM_EMULATE
    emu::cp_async(dst, src, 1, valid);
#else
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 4 : 0) : "memory");
#endif
}
__device__ __forceinline__ void cp_async16(float* dst, const float* src, bool valid) {
    GEMM_CHECK_ALIGNED16(dst);
    GEMM_CHECK_ALIGNED16(src);
#ifdef GEMM_EMULATE
    emu::cp_async(dst, src, 4, valid);
#else
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    // .cg: bypass L1, a B tile is read once per block.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#ifdef GEMM_EMULATE
    emu::cp_async_commit();
#else
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Wait until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef GEMM_EMULATE
    emu::cp_async_wait(N);
#else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ceil(a / b) for a >= 1 without forming a + b - 1 (which overflows int for a near 2^31).
__device__ __forceinline__ int cdiv(int a, int b) { return (a - 1) / b + 1; }

// BLAS: with beta == 0, C is write-only. The branch is uniform (same for every thread), and
// the C load sits on the beta != 0 side only, so NaN or garbage in C never reaches the result.
__device__ __forceinline__ float axpby(float acc, float alpha, float beta, const float* c) {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * (*c);
}

__device__ __forceinline__ float4 axpby4(float4 acc, float alpha, float beta, const float* c) {
    float4 r;
    if (beta == 0.0f) {
        r.x = alpha * acc.x; r.y = alpha * acc.y; r.z = alpha * acc.z; r.w = alpha * acc.w;
    } else {
        const float4 o = ld4(c);
        r.x = alpha * acc.x + beta * o.x; r.y = alpha * acc.y + beta * o.y;
        r.z = alpha * acc.z + beta * o.z; r.w = alpha * acc.w + beta * o.w;
    }
    return r;
}

// Row-major tile order: block b computes tile (b / tiles_n, b % tiles_n). A 1-D grid has no
// 65535 limit (gridDim.y has), so any M, N the 32-bit indexing allows can be launched.
__device__ __forceinline__ void tile_rowmajor(int tiles_n, int& tm, int& tn) {
    const int b = blockIdx.x;
    tm = b / tiles_n;
    tn = b - tm * tiles_n;
}

// Grouped tile order (Triton's "super-grouping"): GROUP consecutive tile rows are walked
// column by column, so the blocks resident at one time share a few A row-panels and B
// column-panels in L2 instead of streaming all of B for every row of tiles. tile_grouped_at
// maps any linear tile index b (stream-K walks tiles that are not its blockIdx).
template <int GROUP>
__device__ __forceinline__ void tile_grouped_at(int b, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int per_group = GROUP * tiles_n;
    const int g = b / per_group;
    const int first = g * GROUP;
    const int rows = min(tiles_m - first, GROUP);
    const int r = b - g * per_group;
    tm = first + r % rows;
    tn = r / rows;
}
template <int GROUP>
__device__ __forceinline__ void tile_grouped(int tiles_m, int tiles_n, int& tm, int& tn) {
    tile_grouped_at<GROUP>(blockIdx.x, tiles_m, tiles_n, tm, tn);
}

// The stream-K iteration space (stages 11 and 13): block b owns iterations [start(b), start(b) + ipb + (b < extra)).
struct StreamKRange {
    int ipt, ipb, extra;  // iterations per tile, per block; blocks with one iteration more
    __device__ __forceinline__ int start(int b) const { return b * ipb + min(b, extra); }
    __device__ __forceinline__ int block_of(int it) const {
        const int big = extra * (ipb + 1);
        return it < big ? it / (ipb + 1) : extra + (it - big) / ipb;
    }
    // Blocks b0..b1 hold tile t's iterations; b0 == b1 means one block computes all of it.
    __device__ __forceinline__ void owners(int t, int& b0, int& b1) const {
        b0 = block_of(t * ipt);
        b1 = block_of(t * ipt + ipt - 1);
    }
    // Which of block b's two workspace slots holds its piece of tile t.
    __device__ __forceinline__ int slot(int b, int t) const { return start(b) / ipt == t ? 0 : 1; }
};

#endif  // GEMM_COMMON_CUH
