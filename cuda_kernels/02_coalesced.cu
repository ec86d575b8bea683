// Stage 02 - coalesced: the same one-thread-per-element kernel with threadIdx.x walking N.
//
// Bottleneck removed: uncoalesced access. Now the 32 lanes of a warp read 32 consecutive
// floats of a row of B (one 128-byte line) and write 32 consecutive floats of C, while they
// all read the same A element (a broadcast). Same instruction count as stage 01, far fewer
// memory transactions.
// Still there: no on-chip reuse; every thread streams a row of A and a column of B from L2.
// Cost: ~30 registers, no shared memory, full occupancy.
// Requirement: none; any M, N, K >= 1.
#include "common.cuh"

template <int BS>
__global__ void __launch_bounds__(BS * BS)
sgemm_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
    int tm, tn;
    tile_rowmajor(cdiv(N, BS), tm, tn);
    const int row = tm * BS + threadIdx.y;
    const int col = tn * BS + threadIdx.x;  // consecutive lanes -> consecutive columns
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = axpby(acc, alpha, beta, &C[row * N + col]);
}
