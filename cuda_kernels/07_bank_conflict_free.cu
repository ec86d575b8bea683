// Stage 07 - bank-conflict free: pad the transposed A tile, and give each thread four 4x4
// patches spread over the block tile instead of one 8x8 square.
//
// Bottleneck removed: the shared-memory bank conflicts of stage 06's fragment loads, and most of
// those of its transposed-A store. Measured with Nsight Compute on an H100 at 2048^3
// (python -m compare.outputs.profile, results/profile/ladder_2048_h100.md): load conflicts 40% -> 0.02%
// of load wavefronts; store conflicts 36.6% -> 7.4% of store wavefronts, not zero.
//  * Store: lanes t and t+1 write the same row m of As at k and k+4. With a row length of BM
//    (a multiple of 32 floats) both land in bank m % 32; a row length of BM+4 shifts k+4 by 16
//    banks, so on paper each scalar store instruction puts the 32 lanes on 32 different banks.
//    ncu still counts 7.4% of store wavefronts as conflicts (335k at 2048^3): the per-instruction
//    pattern does not explain them, and we have not pinned the rest down (candidates: the
//    float4 store of the B tile, or replays between stores of different warps); the name says
//    what the stage is for, the counters say how far it gets.
//  * Load: in stage 06 the 16 lanes of a half warp read B at t_col*8, 32 bytes apart, so a
//    warp's float4 load spans 512 bytes (4 wavefronts) and lands 4 lanes on each bank group.
//    With 4-wide patches at t_col*4 and BN/2 + t_col*4 the lanes read 16 consecutive float4
//    (256 bytes, 2 wavefronts, no conflict). Rows get the same 4 + 4 split for symmetry.
// Cost: same registers as stage 06; BK*4 bytes more shared memory (8.3 KiB), 256 threads.
// Requirement: N % 4 == 0 and K % 4 == 0 (16-byte aligned rows for the float4 accesses).
#include "common.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_bank_conflict_free(int M, int N, int K, float alpha, const float* __restrict__ A,
                         const float* __restrict__ B, float beta, float* __restrict__ C) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    constexpr int A_LOADS = BM * BK / 4 / THREADS;
    constexpr int B_LOADS = BK * BN / 4 / THREADS;
    static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN, "even split");
    static_assert(TM == 8 && TN == 8, "two 4-wide patches per dimension");
    constexpr int A_PAD = 4;  // keeps rows 16-byte aligned and moves k+4 to the other 16 banks
    __shared__ __align__(16) float As[BK][BM + A_PAD];
    __shared__ __align__(16) float Bs[BK][BN];

    int tm, tn;
    tile_rowmajor(cdiv(N, BN), tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int tid = threadIdx.x;
    const int t_row = tid / (BN / TN), t_col = tid % (BN / TN);

    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int r = idx / (BK / 4), kq = (idx % (BK / 4)) * 4;
            const float4 v = (m0 + r < M && k0 + kq < K) ? ld4(&A[(m0 + r) * K + k0 + kq]) : zero;
            As[kq + 0][r] = v.x; As[kq + 1][r] = v.y; As[kq + 2][r] = v.z; As[kq + 3][r] = v.w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int kr = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
            const float4 v = (k0 + kr < K && n0 + c < N) ? ld4(&B[(k0 + kr) * N + n0 + c]) : zero;
            st4(&Bs[kr][c], v);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float4 a = ld4(&As[k][h * (BM / 2) + t_row * 4]);
                ra[4 * h] = a.x; ra[4 * h + 1] = a.y; ra[4 * h + 2] = a.z; ra[4 * h + 3] = a.w;
                const float4 b = ld4(&Bs[k][h * (BN / 2) + t_col * 4]);
                rb[4 * h] = b.x; rb[4 * h + 1] = b.y; rb[4 * h + 2] = b.z; rb[4 * h + 3] = b.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + (i / 4) * (BM / 2) + t_row * 4 + (i % 4);
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = n0 + h * (BN / 2) + t_col * 4;
            if (col >= N) continue;
            float* c = &C[row * N + col];
            st4(c, axpby4(make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]),
                          alpha, beta, c));
        }
    }
}
