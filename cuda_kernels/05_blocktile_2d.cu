// Stage 05 - 2-D block tiling: each thread computes a TMxTN patch of C as an outer product.
//
// Bottleneck removed: shared-memory loads per FMA, again. Per k a thread loads TM values of A
// and TN values of B into registers and does TM*TN FMAs with them: 16 loads for 64 FMAs at
// 8x8, against 9 loads for 8 FMAs in stage 04. A 128x128 block tile also halves the global
// traffic per flop compared with 64x64.
// Still there: the loads are scalar (LDS.32 / LDG.32), and a warp reads its TN B values at a
// stride of TN floats, which costs shared-memory bank conflicts.
// Cost: TM*TN accumulators + TM+TN operands: ~160 registers at 8x8 (the scalar loads keep many
// values in flight), so one 256-thread block per SM; (BM+BN)*BK*4 bytes of shared memory
// (8 KiB at 128x128x8).
// Requirement: none; zero-filled tails, guarded stores.
#include "common.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_blocktile_2d(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    static_assert((BM * BK) % THREADS == 0 && (BN * BK) % THREADS == 0, "tiles split evenly");
    constexpr int A_STRIDE = THREADS / BK;  // rows of the A tile loaded per pass
    constexpr int B_STRIDE = THREADS / BN;  // rows of the B tile loaded per pass
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    int tm, tn;
    tile_rowmajor(cdiv(N, BN), tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int tid = threadIdx.x;
    const int t_row = tid / (BN / TN), t_col = tid % (BN / TN);
    const int a_row = tid / BK, a_col = tid % BK;
    const int b_row = tid / BN, b_col = tid % BN;
    const bool b_ok = n0 + b_col < N;

    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool ak_ok = k0 + a_col < K;
#pragma unroll
        for (int r = 0; r < BM; r += A_STRIDE) {
            const int gr = m0 + a_row + r;
            As[a_row + r][a_col] = (gr < M && ak_ok) ? A[gr * K + k0 + a_col] : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < BK; r += B_STRIDE) {
            const int gk = k0 + b_row + r;
            Bs[b_row + r][b_col] = (b_ok && gk < K) ? B[gk * N + n0 + b_col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = As[t_row * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = Bs[k][t_col * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + t_row * TM + i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + t_col * TN + j;
            if (col < N) C[row * N + col] = axpby(acc[i][j], alpha, beta, &C[row * N + col]);
        }
    }
}
