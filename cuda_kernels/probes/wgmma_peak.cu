// Probe - the instruction ceiling of Hopper's warpgroup MMA for TF32 (wgmma.mma_async
// m64n256k8, the instruction stage 13 and cuBLAS's sm_90 TF32 kernels are built from) on the GPU
// at hand: operands in shared memory written once before the timed loop, the accumulator in
// registers, no global memory access inside the loop. A measurement, not a ladder stage:
// nothing here is registered. cuda_kernels/probes/peaks.py compiles (-arch=sm_90a), launches,
// times and checks it.
//
// One block is one warpgroup (128 threads); blocks per SM are set from the host by unused
// shared memory, as in mma_peak.cu. Each loop iteration issues WGMMA_BODY wgmma on the one
// accumulator (the tensor core chains them without a wait), commits them as one group and waits
// for it, so each iteration is WGMMA_BODY instructions of the kind measured plus the fences and
// the loop's counter, compare and branch (tests/test_probe_peaks.py reads the SASS to check).
// Every element of A is 1 and of B is 1/8: whatever the shared-memory layout, one wgmma adds
// 8 x 1 x 1/8 = 1 to each accumulator, so after s steps each of a thread's 128 accumulators holds
// s and their sum 128 s (exact in fp32 while 128 s < 2^24: MAX_STEPS in peaks.py).

namespace wgprobe {

constexpr int WGMMA_BODY = 16;              // wgmma per loop iteration
constexpr int A_BYTES = 64 * 128;           // A tile: 64 rows of 128 bytes (32 floats of K)
constexpr int B_BYTES = 256 * 128;          // B tile: 256 rows (N) of 128 bytes
constexpr int SMEM_BYTES = A_BYTES + B_BYTES + 1024;  // + room to align the tiles to 1024 bytes

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Shared-memory descriptor of a K-major tile with the 128-byte swizzle (as stage 13 builds it):
// 8-row groups 1024 bytes apart, layout type 1. The tile starts 1024-byte aligned.
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// Keeps the compiler from moving accumulator reads/writes across the asynchronous wgmma.
__device__ __forceinline__ void fence_regs(float (&d)[128]) {
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D += A B, wgmma m64n256k8 TF32, both operands from shared memory.
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, 1, 1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db));
}

}  // namespace wgprobe

extern "C" __global__ void __launch_bounds__(128, 1) wgmma_tf32_peak(int iters, float* __restrict__ out) {
    using namespace wgprobe;
    extern __shared__ unsigned char smem_raw[];
    const unsigned raw = smem_u32(smem_raw);
    const unsigned pad = (1024 - (raw & 1023)) & 1023;
    float* tiles = reinterpret_cast<float*>(smem_raw + pad);
    for (int i = threadIdx.x; i < (A_BYTES + B_BYTES) / 4; i += blockDim.x)
        tiles[i] = i < A_BYTES / 4 ? 1.f : 0.125f;
    // the tiles were written by the generic proxy; wgmma reads them through the async proxy
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const unsigned long long da = sw128_desc(raw + pad), db = sw128_desc(raw + pad + A_BYTES);
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
        fence_regs(acc);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int r = 0; r < WGMMA_BODY; ++r) wgmma_n256(acc, da, db);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_regs(acc);
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 128; ++i) s += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
