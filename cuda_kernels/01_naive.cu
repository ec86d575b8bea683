// Stage 01 - naive: one thread per element of C, straight from the definition.
//
// Bottleneck it shows: memory. threadIdx.x walks M, so the 32 lanes of a warp read A at a
// stride of K floats and write C at a stride of N floats: every lane touches its own 32-byte
// sector, and each A and B value is fetched from L2/DRAM again by every thread that needs it
// (2K loads per 2K flops). Nothing is reused on chip.
// Cost: ~30 registers, no shared memory, full occupancy; it is slow anyway.
// Requirement: none; any M, N, K >= 1 (out-of-range threads just return).
#include "common.cuh"

template <int BS>
__global__ void __launch_bounds__(BS * BS)
sgemm_naive(int M, int N, int K, float alpha, const float* __restrict__ A,
            const float* __restrict__ B, float beta, float* __restrict__ C) {
    int tm, tn;
    tile_rowmajor(cdiv(N, BS), tm, tn);
    // Lanes of a warp differ in threadIdx.x, i.e. in the row: the uncoalesced mapping.
    const int row = tm * BS + threadIdx.x;
    const int col = tn * BS + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = axpby(acc, alpha, beta, &C[row * N + col]);
}
