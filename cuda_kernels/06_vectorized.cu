// Stage 06 - vectorized: 128-bit global loads, and A stored transposed in shared memory so a
// thread's TM A values are contiguous and load as float4 too.
//
// Bottleneck removed: load instruction count. Stage 05 issued one LDG.32 per float and read
// its A column (8 floats at a stride of BK) with 8 LDS.32. Here a thread brings in its share
// of each tile with one LDG.128 of A and one of B, and reads its 8+8 operands per k with four
// LDS.128. C is read and written as float4 too.
// Still there: the transposed store hits the same bank from two lanes (2-way conflict), and
// the B operands of a warp are 32 bytes apart, so each B read spans 512 bytes (4 wavefronts).
// Cost: ~110 registers at 8x8, 8 KiB of shared memory, 256 threads.
// Requirement: N % 4 == 0 and K % 4 == 0: every row of A, B and C must start 16-byte aligned
// for a float4 to hold four elements of one row. M is free.
#include "common.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vectorized(int M, int N, int K, float alpha, const float* __restrict__ A,
                 const float* __restrict__ B, float beta, float* __restrict__ C) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    constexpr int A_LOADS = BM * BK / 4 / THREADS;
    constexpr int B_LOADS = BK * BN / 4 / THREADS;
    static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN, "even split");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "operands load as float4");
    __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
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
            // K % 4 == 0: a float4 starting inside K ends inside K.
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
            for (int i = 0; i < TM; i += 4) {
                const float4 v = ld4(&As[k][t_row * TM + i]);
                ra[i] = v.x; ra[i + 1] = v.y; ra[i + 2] = v.z; ra[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = ld4(&Bs[k][t_col * TN + j]);
                rb[j] = v.x; rb[j + 1] = v.y; rb[j + 2] = v.z; rb[j + 3] = v.w;
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
        const int row = m0 + t_row * TM + i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = n0 + t_col * TN + j;
            if (col >= N) continue;  // N % 4 == 0: a float4 is all in or all out
            float* c = &C[row * N + col];
            st4(c, axpby4(make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]),
                          alpha, beta, c));
        }
    }
}
