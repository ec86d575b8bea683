// Stage 08 - warp tiling: each warp owns a compact 32x64 region of the block tile, and its
// lanes are arranged 4x8 inside it (geometry and rationale in warp_tile.cuh).
//
// Bottleneck removed: shared-memory wavefronts per FMA. In stage 07 a warp's footprint was a
// 16x128 strip split in four pieces: its B loads touched 256 bytes (2 wavefronts) per LDS.128.
// A 32x64 warp tile with a 4x8 lane grid touches 64 bytes of A and 128 bytes of B per load:
// one wavefront each, half the shared-memory time per k of stage 07. Tiles are also launched
// in grouped order (8 tile rows at a time) so concurrently running blocks share L2 lines.
// This stage also makes the fast path total: a VEC=false instantiation does the same work with
// predicated 4-byte accesses, so any M, N, K runs (float4 only where rows are 16-byte aligned).
// Still there: load -> barrier -> compute -> barrier: while a block waits for its global loads,
// only the other resident block computes.
// Cost: <= 128 registers (__launch_bounds__(256, 2): two blocks per SM), 8.3 KiB of shared
// memory at 128x128x8, 256 threads.
// Requirement: none. VEC=true needs K % 4 == 0 and N % 4 == 0; the loader picks it when they hold.
#include "common.cuh"
#include "warp_tile.cuh"

template <int BM, int BN, int BK, bool VEC>
__global__ void __launch_bounds__(WarpTile<BM, BN, BK>::THREADS, 2)
sgemm_warptile(int M, int N, int K, float alpha, const float* __restrict__ A,
               const float* __restrict__ B, float beta, float* __restrict__ C) {
    using G = WarpTile<BM, BN, BK>;
    __shared__ __align__(16) float smem[G::STAGE];
    int tm, tn;
    tile_grouped<8>(cdiv(M, BM), cdiv(N, BN), tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int tid = threadIdx.x;
    int tr, tc;
    thread_origin<G>(tid, tr, tc);

    Fetcher<G, VEC> f;
    f.init(M, N, K, A, B, m0, n0, 0, tid);
    float acc[8][8] = {};
    float fa[8], fb[8];
    for (int k0 = 0; k0 < K; k0 += BK) {
        f.fetch(k0, K);
        f.store(smem, tid);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            load_frag<G>(smem, k, tr, tc, fa, fb);
            outer_product(acc, fa, fb);
        }
        __syncthreads();  // the next store must not overwrite operands another warp still reads
    }
    epilogue_store<VEC>(acc, M, N, alpha, beta, C, m0, n0, tr, tc);
}
