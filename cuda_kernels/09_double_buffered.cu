// Stage 09 - double buffering: two shared-memory stages filled by cp.async, so the global loads
// of tile t+1 are in flight while tile t is computed, with one barrier per K step.
//
// Bottleneck removed: exposed global-memory latency and the second barrier of stage 08.
//  * At the top of step t each thread issues the asynchronous copies of tile t+1 into the
//    other stage (cp.async, sm_80+); the BK*64 FFMAs per thread of step t hide their latency,
//    and nothing waits for them until the end of the step (cp.async.wait_group 0 + one
//    __syncthreads). Interior blocks issue them without predicates.
//  * cp.async moves global data straight to shared memory: the prefetch costs no registers
//    (a register prefetch, LDG then STS, needs 8-16 and pushed this kernel past 128 into
//    spills), so two blocks (16 warps) still fit per SM.
//  * One barrier per step is enough: the stage being filled was last read before the previous
//    barrier, and the stage being read was completed (wait + barrier) before it.
//  * Operands are double buffered in registers: the LDS.128 of k+1 is issued before the FFMAs
//    of k, so shared-memory latency hides behind 64 independent FFMAs.
// A is still transposed on its way to shared memory, now as 4-byte copies (cp.async can't
// shuffle a float4) arranged so a warp reads whole 32-byte sectors and writes 32 banks (see
// AsyncFetcher). B goes in 16-byte copies when rows are 16-byte aligned (VEC).
// Cost: <= 128 registers (__launch_bounds__(256, 2): 2 blocks, 16 warps per SM), 2 stages of
// shared memory: 32.5 KiB at BK=16 (default: half the barriers and loop overhead of BK=8),
// 16.3 KiB at BK=8; needs sm_80 or newer (cp.async). The 128x256 variants (8x16 per thread)
// take up to 255 registers and 1 block per SM instead.
// Requirement: none (VEC=false instantiation for shapes with K % 4 != 0 or N % 4 != 0).
// The main loop takes a K range [k_begin, k_end) so stage 10 (split-K) reuses it unchanged.
#include "common.cuh"
#include "warp_tile.cuh"

// Issues the copies of one tile.
// A: cp.async can't transpose a float4, so A moves as 4-byte copies, laid out for that: 8
// consecutive lanes copy 8 consecutive k of one row (a full 32-byte sector), a warp covers 4
// rows, and thread t handles rows t/8 + 32*p (p < BM/32) at k = 8*h + t%8 (h < BK/8). In the
// padded transposed tile the 32 lanes then write banks (4*k + m) % 32: all different.
// B: one 16-byte copy per float4 when rows are 16-byte aligned (VEC), else four 4-byte copies;
// a warp copies one 512-byte row segment of the B tile (layout as in warp_tile.cuh).
template <class G, bool VEC>
struct AsyncFetcher {
    static constexpr int ROWS_PER_PASS = G::THREADS / 8;
    static constexpr int A_PASSES = G::BM / ROWS_PER_PASS;
    static_assert(A_PASSES * ROWS_PER_PASS == G::BM, "A tile rows split evenly over the passes");
    const float* a;   // A + row0*K + k_begin + t%8, row0 = m0 + t/8 (clamped into the matrix)
    const float* b;   // B + (k_begin + t/32)*N + col (col clamped to the last float4 of the row)
    int a_k, b_k, b_n, N, a_rows;  // a_rows: rows of this thread's passes that exist
    size_t a_pass;                 // elements between two passes: ROWS_PER_PASS * K
    int a_dst, b_dst;              // this thread's offsets inside a stage

    __device__ __forceinline__ void init(int M, int N_, int K, const float* A, const float* B,
                                         int m0, int n0, int k_begin, int tid) {
        N = N_;
        const int r = m0 + tid / 8;
        a_rows = r < M ? cdiv(M - r, ROWS_PER_PASS) : 0;  // pass p exists iff p < a_rows
        a_k = tid % 8;
        a = A + (size_t)(r < M ? r : M - 1) * K + k_begin + a_k;
        a_pass = (size_t)ROWS_PER_PASS * K;
        b_k = tid / (G::BN / 4);
        const int c = (tid % (G::BN / 4)) * 4;
        b_n = n0 + c;
        b = B + (size_t)(k_begin + b_k) * N + (b_n < N ? b_n : (N - 1) / 4 * 4);
        a_dst = a_k * G::AS_LD + tid / 8;
        b_dst = G::A_FLOATS + b_k * G::BN + c;
    }

    // Copies of the tile starting at k0 into `stage`; zeros where k >= k_end or outside M, N.
    // FULL: the caller knows the whole tile is inside the matrix and the K range, so the
    // copies go out without predicates (the common case: every step of an interior block
    // but the last).
    // A copy that writes zeros reads nothing, but its source address is still kept legal:
    // a_safe / b_safe, the matrices' first elements (kernel parameters: no registers).
    template <bool FULL>
    __device__ __forceinline__ void issue(float* stage, int k0, int k_end, const float* a_safe,
                                          const float* b_safe) {
#pragma unroll
        for (int h = 0; h < G::BK / 8; ++h) {
            const bool k_ok = FULL || k0 + 8 * h + a_k < k_end;
#pragma unroll
            for (int p = 0; p < A_PASSES; ++p) {
                const bool ok = FULL || (k_ok && p < a_rows);
                cp_async4(stage + a_dst + 8 * h * G::AS_LD + p * ROWS_PER_PASS,
                          ok ? a + p * a_pass + 8 * h : a_safe, ok);
            }
        }
#pragma unroll
        for (int l = 0; l < G::B_LOADS; ++l) {
            const bool k_ok = FULL || k0 + b_k + G::B_ROWS_PER_LOAD * l < k_end;
            const float* p = b + (size_t)(G::B_ROWS_PER_LOAD * l) * N;
            float* d = stage + b_dst + G::B_ROWS_PER_LOAD * l * G::BN;
            if (VEC) {
                const bool ok = FULL || (k_ok && b_n < N);
                cp_async16(d, ok ? p : b_safe, ok);
            } else {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const bool ok = FULL || (k_ok && b_n + i < N);
                    cp_async4(d + i, ok ? p + i : b_safe, ok);
                }
            }
        }
        cp_async_commit();
        a += G::BK;
        b += (size_t)G::BK * N;
    }
};

// STAGES shared-memory stages (2 = double buffering; 3 gives each copy two steps to land).
// Step s computes stage s % STAGES while tiles s+1 .. s+STAGES-1 are in flight. Every step
// commits one cp.async group (an empty one past the last tile), so "tile s+1 has landed" is
// always "at most STAGES-2 groups still pending".
template <int BM, int BN, int BK, int STAGES, bool VEC, int WN = 64>
__device__ __forceinline__ void mainloop_double_buffered(float (&acc)[8][WN / 8], float* smem, int M, int N,
                                                         int K, const float* __restrict__ A,
                                                         const float* __restrict__ B, int m0, int n0,
                                                         int k_begin, int k_end, int tid, int tr, int tc) {
    using G = WarpTile<BM, BN, BK, WN>;
    static_assert(STAGES >= 2, "a pipeline needs two stages");
    AsyncFetcher<G, VEC> f;
    f.init(M, N, K, A, B, m0, n0, k_begin, tid);
    // Interior block: every row and column of its tile exists (uniform over the block).
    const bool interior = m0 + BM <= M && n0 + BN <= N;

#pragma unroll
    for (int i = 0; i < STAGES - 1; ++i) {
        if (k_begin + i * BK < k_end) f.template issue<false>(smem + i * G::STAGE, k_begin + i * BK, k_end, A, B);
        else cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    int read = 0;                          // offset of the stage computed now
    int write = (STAGES - 1) * G::STAGE;   // offset of the stage filled during this step
    float fa[2][8], fb[2][G::TN];
    load_frag<G>(smem + read, 0, tr, tc, fa[0], fb[0]);
    // k: first k of the tile computed in this step; kn: first k of the tile issued in it.
    for (int k = k_begin, kn = k_begin + (STAGES - 1) * BK; k < k_end; k += BK, kn += BK) {
        // Tile kn goes where tile k-BK was: all reads of it ended before the last barrier.
        if (kn >= k_end) cp_async_commit();
        else if (interior && kn + BK <= k_end) f.template issue<true>(smem + write, kn, k_end, A, B);
        else f.template issue<false>(smem + write, kn, k_end, A, B);
        const bool more = k + BK < k_end;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk < BK - 1) {
                load_frag<G>(smem + read, kk + 1, tr, tc, fa[(kk + 1) % 2], fb[(kk + 1) % 2]);
            } else if (more) {
                cp_async_wait<STAGES - 2>();  // this thread's copies of the next tile have landed ...
                __syncthreads();              // ... and everyone's; all reads of this stage are done
                read = read == (STAGES - 1) * G::STAGE ? 0 : read + G::STAGE;
                write = write == (STAGES - 1) * G::STAGE ? 0 : write + G::STAGE;
                load_frag<G>(smem + read, 0, tr, tc, fa[(kk + 1) % 2], fb[(kk + 1) % 2]);
            }
            outer_product(acc, fa[kk % 2], fb[kk % 2]);
        }
    }
    cp_async_wait<0>();  // no copy may still target shared memory when the block exits
}

// Variants (registry.VARIANTS_09, the `tile` option): WN = 128 gives 8x16 per thread on a
// 128x256 block tile (1 block per SM, up to 255 registers); GROUP is the tile rows of the
// launch-order swizzle (tile_grouped).
template <int BM, int BN, int BK, int STAGES, bool VEC, int WN, int GROUP>
__global__ void __launch_bounds__(WarpTile<BM, BN, BK, WN>::THREADS, WN == 64 ? 2 : 1)
sgemm_double_buffered(int M, int N, int K, float alpha, const float* __restrict__ A,
                      const float* __restrict__ B, float beta, float* __restrict__ C) {
    using G = WarpTile<BM, BN, BK, WN>;
    __shared__ __align__(16) float smem[STAGES * G::STAGE];
    int tm, tn;
    tile_grouped<GROUP>(cdiv(M, BM), cdiv(N, BN), tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int tid = threadIdx.x;
    int tr, tc;
    thread_origin<G>(tid, tr, tc);
    float acc[8][G::TN] = {};
    mainloop_double_buffered<BM, BN, BK, STAGES, VEC, WN>(acc, smem, M, N, K, A, B, m0, n0, 0, K, tid, tr, tc);
    epilogue_store<VEC>(acc, M, N, alpha, beta, C, m0, n0, tr, tc);
}
