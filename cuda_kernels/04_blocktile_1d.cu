// Stage 04 - 1-D block tiling: each thread computes TM results of one column of C.
//
// Bottleneck removed: shared-memory loads per FMA. In stage 03 every FMA needed two shared
// loads. Here a thread loads one B value and reuses it for TM FMAs (the TM A values are
// broadcasts, shared by the whole warp), so shared traffic per FMA drops about TM-fold and
// each block does TM times more work per byte it brings in from global memory.
// Cost: TM accumulators per thread (~40 registers at TM=8), (BM+BN)*BK*4 bytes of shared
// memory (4 KiB at 64x64x8), BM*BN/TM threads per block (512).
// Requirement: none; tiles past the edges are zero filled, stores are guarded.
#include "common.cuh"

template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
sgemm_blocktile_1d(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C) {
    constexpr int THREADS = BM * BN / TM;
    // One A element and one B element per thread per K tile keeps the loads trivially coalesced.
    static_assert(THREADS == BM * BK && THREADS == BN * BK, "one element of each tile per thread");
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    int tm, tn;
    tile_rowmajor(cdiv(N, BN), tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int tid = threadIdx.x;
    const int t_col = tid % BN;          // a warp covers 32 consecutive columns ...
    const int t_row = tid / BN;          // ... of one strip of TM rows: the A reads broadcast
    const int a_row = tid / BK, a_col = tid % BK;
    const int b_row = tid / BN, b_col = tid % BN;
    const bool a_ok = m0 + a_row < M, b_ok = n0 + b_col < N;

    float acc[TM] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[a_row][a_col] = (a_ok && k0 + a_col < K) ? A[(m0 + a_row) * K + k0 + a_col] : 0.0f;
        Bs[b_row][b_col] = (b_ok && k0 + b_row < K) ? B[(k0 + b_row) * N + n0 + b_col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k][t_col];  // one shared load feeds TM FMAs
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[t_row * TM + i][k] * b;
        }
        __syncthreads();
    }
    const int col = n0 + t_col;
    if (col >= N) return;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + t_row * TM + i;
        if (row < M) C[row * N + col] = axpby(acc[i], alpha, beta, &C[row * N + col]);
    }
}
