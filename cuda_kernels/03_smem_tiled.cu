// Stage 03 - shared-memory tiling: a block stages a BSxBS tile of A and of B in shared
// memory, then every thread of the block reads them from there.
//
// Bottleneck removed: global traffic. Each A and B value is read from global memory once per
// block instead of once per thread (BS times less traffic).
// Still there: each FMA needs two shared-memory loads (one a broadcast), so the kernel is
// bound by shared-memory instruction issue, not by arithmetic.
// Cost: 2*BS*BS*4 bytes of shared memory (8 KiB at BS=32), 1024 threads per block,
// two __syncthreads per K tile.
// Requirement: none; tails are loaded as zeros and the stores are guarded.
#include "common.cuh"

template <int BS>
__global__ void __launch_bounds__(BS * BS)
sgemm_smem_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                 const float* __restrict__ B, float beta, float* __restrict__ C) {
    __shared__ float As[BS][BS];
    __shared__ float Bs[BS][BS];
    int tm, tn;
    tile_rowmajor(cdiv(N, BS), tm, tn);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = tm * BS + ty;
    const int col = tn * BS + tx;
    // Out-of-range threads still take part in the loads and barriers; only their store is skipped.
    const bool row_ok = row < M, col_ok = col < N;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BS) {
        // Zero fill past the edges makes the inner product over the whole tile correct.
        As[ty][tx] = (row_ok && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (col_ok && k0 + ty < K) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BS; ++k) acc += As[ty][k] * Bs[k][tx];  // As: broadcast; Bs: 32 banks
        __syncthreads();  // nobody overwrites the tiles while another warp still reads them
    }
    if (row_ok && col_ok) C[row * N + col] = axpby(acc, alpha, beta, &C[row * N + col]);
}
