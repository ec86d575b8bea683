// Stage 10 - split-K: blockIdx.z picks a slice of K; each slice runs the stage 09 main loop
// on its K range and writes a partial tile; a second kernel adds the partials.
//
// Bottleneck removed: idle SMs. When M*N has few 128x128 tiles (256x256 has 4, for 132 SMs)
// no per-tile schedule can fill the GPU, however fast each block is; long K is the only
// parallelism left. S slices give S times more blocks, each with K/S of the work.
// Cost: the partials travel through memory: S*M*N floats written and read again (a workspace
// allocated once per problem), plus one small kernel launch. The split count is chosen on
// the host from the SM count, the tile count and K (cuda_kernels/launch.py), so the
// partial traffic stays a few percent of the GEMM time. Per block: same registers and shared
// memory as stage 09.
// Determinism: split_k_reduce adds the S partials of an element in a fixed order (slice 0,
// 1, ...), and applies alpha and beta once, so a result is bit-identical run to run.
// The ATOMIC=true instantiation adds alpha*partial straight into C with atomicAdd after
// scale_c has made C = beta*C: no workspace, but the order of the additions (and so the last
// bits) changes from run to run. It is registered as a separate, labeled variant.
// Requirement: none (VEC=false path for K % 4 != 0 or N % 4 != 0; the workspace reduction is
// float4 when M*N % 4 == 0).
#include "common.cuh"
#include "warp_tile.cuh"
#include "09_double_buffered.cu"

template <int BM, int BN, int BK, int STAGES, bool VEC, bool ATOMIC>
__global__ void __launch_bounds__(WarpTile<BM, BN, BK>::THREADS, 2)
sgemm_split_k(int M, int N, int K, int k_chunk, float alpha, const float* __restrict__ A,
              const float* __restrict__ B, float* __restrict__ out) {
    using G = WarpTile<BM, BN, BK>;
    __shared__ __align__(16) float smem[STAGES * G::STAGE];
    int tm, tn;
    tile_grouped<8>(cdiv(M, BM), cdiv(N, BN), tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int k_begin = blockIdx.z * k_chunk;           // host guarantees k_begin < K
    const int k_end = min(K, k_begin + k_chunk);
    const int tid = threadIdx.x;
    int tr, tc;
    thread_origin<G>(tid, tr, tc);
    float acc[8][8] = {};
    mainloop_double_buffered<BM, BN, BK, STAGES, VEC>(acc, smem, M, N, K, A, B, m0, n0, k_begin, k_end, tid, tr, tc);
    if (ATOMIC) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int row = m0 + acc_row(tr, i);
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int col = n0 + acc_col(tc, j);
                if (col < N) atomicAdd(out + row * N + col, alpha * acc[i][j]);
            }
        }
    } else {
        // Raw partial sums into slice z of the workspace; alpha/beta wait for the reduction.
        epilogue_store<VEC>(acc, M, N, 1.0f, 0.0f, out + (size_t)blockIdx.z * M * N, m0, n0, tr, tc);
    }
}

// C = alpha * sum_z ws[z] + beta * C, summing z = 0, 1, ..., S-1 in that order.
// VEC4: four consecutive elements per thread (needs M*N % 4 == 0 so every slice is aligned).
// A memory stream: THREADS is small so a small M*N still spreads over many SMs.
template <bool VEC4, int THREADS>
__global__ void __launch_bounds__(THREADS)
split_k_reduce(int MN, int S, float alpha, const float* __restrict__ ws, float beta,
               float* __restrict__ C) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (VEC4) {
        if (t >= MN / 4) return;
        const float* p = ws + 4 * t;
        float4 s = ld4(p);
#pragma unroll 8  // independent loads in flight; the adds stay in slice order
        for (int z = 1; z < S; ++z) {
            const float4 v = ld4(p + (size_t)z * MN);
            s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
        }
        st4(C + 4 * t, axpby4(s, alpha, beta, C + 4 * t));
    } else {
        if (t >= MN) return;
        float s = ws[t];
#pragma unroll 8
        for (int z = 1; z < S; ++z) s += ws[t + (size_t)z * MN];
        C[t] = axpby(s, alpha, beta, C + t);
    }
}

// Atomic variant's first step: C = beta*C (C = 0 when beta == 0: C is not read then).
template <int THREADS>
__global__ void __launch_bounds__(THREADS) scale_c(int MN, float beta, float* __restrict__ C) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < MN) C[t] = beta == 0.0f ? 0.0f : beta * C[t];
}
