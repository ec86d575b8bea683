// Stage 13 - Hopper's warpgroup MMA fed by the tensor memory accelerator: wgmma.mma_async
// TF32 from 128-byte-swizzled shared memory that TMA (cp.async.bulk.tensor.2d on mbarriers)
// fills; one producer warpgroup, two consumer warpgroups (setmaxnreg 40 / 232).
//
// Bottleneck removed: stage 12's latency (mma.sync issued warp by warp: tensor pipe 57% busy).
// One wgmma m64n256k8 is 131072 multiply-adds issued by a warpgroup, asynchronous, and the copy
// engine moves the tiles. STAGES-deep full/empty mbarrier pipeline, BK = 32 floats.
//  * sgemm_wgmma_regb (the default): C^T = B^T A^T, A's tile the K-major shared-memory operand,
//    B^T the register operand loaded from B's tile as stored (TF32 reads shared operands K-major
//    only), 256-, 128- or 64-row tiles of C. N % 4 != 0 (option b_unaligned): B's rows padded by
//    a copy, one bulk copy per K tile (N <= 128, B_BULK) or the producer's cp.async (B_ASYNC).
//    sgemm_wgmma_tma (b_transpose=copy): a K-major copy of B.
//  * A to TMA as given, else copied (K % 4 != 0, unaligned, tf32x3's split); tf32x3 with N <=
//    384 (A_RAW, a_split=smem): the producer splits A's raw tile in shared memory instead.
//  * tf32x3: big = tf32(x), small = tf32(x - big); 12 wgmma per 32-wide K tile (b_s a_b, b_b
//    a_s, b_b a_b per k8) into a temporary added by FADD, so the tensor cores' truncating
//    accumulation stays on partial sums of 32.
//  * Split-K where tiles leave SMs idle (the shared split-K model), summed in split order; the
//    stream-K build (SK, option mode) for tf32x3 tiles filling <= 3/4 of the SMs, its split
//    tiles summed in block order: deterministic either way.
// Not here: a single row or N <= 8 goes to stage 11's bandwidth paths, tf32x3 with N <= 64 and
// M >= 65 to stage 11's tile plan (heuristics.py WGMMA_PATH_RULE, option path).
// Still there: the operand copies where they run; tf32x3's wait_group 0 per K tile and register
// stores (tf32 stores C through shared memory).
// Measured (docs/results.md, stage 13): tf32 97% / 101% of cuBLAS tf32 at 4096^3 / 8192^3,
// tf32x3 2.4x / 2.2x cuBLAS fp32 (H200).
// Cost: 384 threads, 1 block per SM, ~193 KiB of shared memory, up to 128 accumulators per
// consumer thread (tf32x3: 64 + a 64-register temporary); workspaces for the copies, split-K
// partials and stream-K tiles.
// Requirement: sm_90a (wgmma, setmaxnreg; compiled with -arch=sm_90a, run on compute
// capability 9.0 only); any M, N, K >= 1 (TMA zero-fills past the matrix, stores predicated).
#include "common.cuh"
#include "wgmma_tma.cuh"

namespace wgmma13 {

constexpr int BM = 128, BK = 32;
constexpr int THREADS = 384;       // warpgroup 0: producer; 1 and 2: consumers of 64 rows each
constexpr int A_TILE = BM * BK * 4;  // bytes of one A tile (16 KiB)

}  // namespace wgmma13

// B's K-major copy (b_transpose=copy) launched before the GEMM: src (R x Cn, row-major) -> its
// transpose in big (and small), rows of ldd floats. big = tf32(x); SPLIT: small = tf32(x - big)
// (0 where x is inf, so inf - inf can't poison the sum). 32x32 tiles through padded shared memory
// (reads and writes coalesced), 32x8 threads.
template <bool SPLIT>
__global__ void __launch_bounds__(256) tf32_transpose(const float* __restrict__ src, int R, int Cn,
                                                     float* __restrict__ big, float* __restrict__ small, int ldd) {
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int i = ty; i < 32; i += 8) {
        const int r = r0 + i, c = c0 + tx;
        tile[i][tx] = (r < R && c < Cn) ? src[(size_t)r * Cn + c] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int i = ty; i < 32; i += 8) {
        const int orow = c0 + i, ocol = r0 + tx;
        if (orow >= Cn || ocol >= R) continue;
        const float x = tile[tx][i];
        const float b = wgmma13::tf32_round(x);
        const size_t at = (size_t)orow * ldd + ocol;
        big[at] = b;
        if (SPLIT) small[at] = wgmma13::tf32_small(x, b);
    }
}

// The row copies launched before the GEMM: src (R x Cn, row-major) into rows of ldd floats (ldd =
// Cn rounded up to 4: TMA's 16-byte row stride), so TMA reads any K or N. mode PAD_AS_IS: values
// unchanged (B's rows where N % 4 != 0; A's where the GEMM splits it); PAD_ROUND: tf32(x) (tf32's
// A where K % 4 != 0 or unaligned); PAD_SPLIT: big = tf32(x) into dst, small = tf32(x - big) into
// dst_s (tf32x3's split copy of A; 0 where x is inf, so inf - inf can't poison the sum).
// A warp copies 256 columns of a row, 8 coalesced loads a lane in flight before its stores; a warp
// keeps its chunk and steps over rows, so no index needs a division. A flat grid-stride loop with
// a 64-bit division per element moved 2.7 TB/s (A of 4307x137x4489: 57 us; docs/findings.md).
// Two matrices in one launch where both need it (A's rows and B's: src2 not null), the warps
// shared in proportion to their floats: one launch fewer ran the held-out rows with both pads
// 1.028x (docs/findings.md).
enum PadMode { PAD_AS_IS = 0, PAD_ROUND = 1, PAD_SPLIT = 2 };

__device__ __forceinline__ void pad_rows_part(const float* __restrict__ src, int R, int Cn, float* __restrict__ dst,
                                              int ldd, float* __restrict__ dst_s, int mode, int warp, int warps) {
    constexpr int PER = 8, SPAN = 32 * PER;   // floats a lane, a warp's chunk of a row
    const int chunks = (Cn + SPAN - 1) / SPAN, lane = threadIdx.x % 32;
    auto copy = [&](int r, int chunk) {
        const float* s = src + (size_t)r * Cn;
        const size_t row = (size_t)r * ldd;
        const int c0 = chunk * SPAN + lane;
        float v[PER];
#pragma unroll
        for (int j = 0; j < PER; ++j) v[j] = c0 + 32 * j < Cn ? s[c0 + 32 * j] : 0.f;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int c = c0 + 32 * j;
            if (c >= Cn) continue;
            if (mode == PAD_AS_IS) {
                dst[row + c] = v[j];
            } else {
                const float b = wgmma13::tf32_round(v[j]);
                dst[row + c] = b;
                if (mode == PAD_SPLIT) dst_s[row + c] = wgmma13::tf32_small(v[j], b);
            }
        }
    };
    if (warps >= chunks) {   // warp w: chunk w % chunks of rows w / chunks, + warps / chunks, ...
        const int per = warps / chunks;
        if (warp >= per * chunks) return;
        for (int r = warp / chunks; r < R; r += per) copy(r, warp % chunks);
    } else {
        for (int chunk = warp; chunk < chunks; chunk += warps)
            for (int r = 0; r < R; ++r) copy(r, chunk);
    }
}

__global__ void __launch_bounds__(256) pad_rows(const float* __restrict__ src, int R, int Cn,
                                                float* __restrict__ dst, int ldd, float* __restrict__ dst_s, int mode,
                                                const float* __restrict__ src2, int R2, int Cn2,
                                                float* __restrict__ dst2, int ldd2, float* __restrict__ dst2_s,
                                                int mode2) {
    const int warp = blockIdx.x * 8 + threadIdx.x / 32, warps = gridDim.x * 8;
    // The first matrix's share of the warps, at least one each where there are two.
    const double first = (double)R * Cn / ((double)R * Cn + (src2 ? (double)R2 * Cn2 : 0.0));
    const int w1 = src2 ? min(warps - 1, max(1, (int)(first * warps))) : warps;
    if (warp < w1)
        pad_rows_part(src, R, Cn, dst, ldd, dst_s, mode, warp, w1);
    else
        pad_rows_part(src2, R2, Cn2, dst2, ldd2, dst2_s, mode2, warp - w1, warps - w1);
}

// C = alpha * A @ B + beta * C with A through tA (M x K, K-major) and B through tB (its
// transpose, N x K); tAs / tBs: the small parts (SPLIT3 only; otherwise unused copies).
// Tiles in launch order grouped by 8 tile rows, so concurrently running blocks share B columns
// in L2.
template <int BN, int STAGES, bool SPLIT3>
__global__ void __launch_bounds__(wgmma13::THREADS, 1)
sgemm_wgmma_tma(const __grid_constant__ wgmma13::TensorMap tA, const __grid_constant__ wgmma13::TensorMap tB,
                const __grid_constant__ wgmma13::TensorMap tAs, const __grid_constant__ wgmma13::TensorMap tBs,
                int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                int kt_per_split, float* __restrict__ partials) {
    using namespace wgmma13;
    constexpr int B_TILE = BN * BK * 4;
    constexpr int PARTS = SPLIT3 ? 2 : 1;
    constexpr int STAGE = PARTS * (A_TILE + B_TILE);
    constexpr int ACC = BN / 2;  // accumulators per consumer thread (64 x BN over 128 threads)
    constexpr int GROUP = 8;
    static_assert(BN == 128 || BN == 256, "wgmma n128 / n256");

    extern __shared__ unsigned char smem_raw[];
    // Swizzled tiles must start 1024-byte aligned: the launch asks for 1 KiB of slack.
    const unsigned raw = smem_u32(smem_raw);
    const unsigned base = (raw + 1023u) & ~1023u;
    const unsigned bars = base + STAGES * STAGE;  // full[s] at bars + 8s, empty[s] at bars + 8(STAGES + s)

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = GROUP * tiles_n, group = blockIdx.x / per_group;
    const int first_m = group * GROUP, gsize = min(tiles_m - first_m, GROUP);
    const int in_group = blockIdx.x % per_group;
    const int m0 = (first_m + in_group % gsize) * BM, n0 = (in_group / gsize) * BN;
    // Split-K: blockIdx.y owns K tiles [kt0, kt0 + ktiles); unsplit, kt_per_split covers all of K.
    const int kt0 = blockIdx.y * kt_per_split;
    const int ktiles = max(0, min((K + BK - 1) / BK - kt0, kt_per_split));
    const int wg = threadIdx.x / 128;
    // A split block writes its raw partial tile to its own slice (alpha 1, beta 0: C untouched);
    // splitk_reduce then sums the slices in split order, so the result is bit-identical run to run.
    float* const out = partials ? partials + (size_t)blockIdx.y * M * N : C;
    const float a_out = partials ? 1.0f : alpha, b_out = partials ? 0.0f : beta;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bars + 8 * s, 1);                     // the producer's expect_tx arrival
            mbar_init(bars + 8 * (STAGES + s), 256);        // every consumer thread
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < ktiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(bars + 8 * (STAGES + s), ((kt / STAGES) - 1) & 1);
                const unsigned full = bars + 8 * s, st = base + s * STAGE;
                mbar_expect_tx(full, STAGE);
                tma_load(st, tA, full, (kt0 + kt) * BK, m0);
                tma_load(st + A_TILE, tB, full, (kt0 + kt) * BK, n0);
                if (SPLIT3) {
                    tma_load(st + A_TILE + B_TILE, tAs, full, (kt0 + kt) * BK, m0);
                    tma_load(st + 2 * A_TILE + B_TILE, tBs, full, (kt0 + kt) * BK, n0);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1;  // rows m0 + 64 cw .. + 63
        float acc[ACC];
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
        float tmp[SPLIT3 ? ACC : 1];

        for (int kt = 0; kt < ktiles; ++kt) {
            const int s = kt % STAGES;
            mbar_wait(bars + 8 * s, (kt / STAGES) & 1);
            const unsigned st = base + s * STAGE;
            const unsigned a = st + cw * 64 * 128, b = st + A_TILE;  // 64 rows of 128 bytes
            if constexpr (!SPLIT3) {
                fence_regs(acc);
                wgmma_fence();
#pragma unroll
                for (int k = 0; k < BK / 8; ++k)
                    wgmma_tile<BN>(acc, sw128_desc(a + 32 * k), sw128_desc(b + 32 * k), 1);
                wgmma_commit();
                fence_regs(acc);
                // The group before this one is done: its stage may be refilled.
                wgmma_wait<1>();
                fence_regs(acc);
                if (kt > 0) mbar_arrive(bars + 8 * (STAGES + (kt - 1) % STAGES));
            } else {
                const unsigned as = a + A_TILE + B_TILE, bs = b + A_TILE + B_TILE;
                fence_regs(tmp);
                wgmma_fence();
#pragma unroll
                for (int k = 0; k < BK / 8; ++k) {
                    wgmma_tile<BN>(tmp, sw128_desc(as + 32 * k), sw128_desc(b + 32 * k), k > 0);
                    wgmma_tile<BN>(tmp, sw128_desc(a + 32 * k), sw128_desc(bs + 32 * k), 1);
                    wgmma_tile<BN>(tmp, sw128_desc(a + 32 * k), sw128_desc(b + 32 * k), 1);
                }
                wgmma_commit();
                fence_regs(tmp);
                wgmma_wait<0>();
                fence_regs(tmp);
                mbar_arrive(bars + 8 * (STAGES + s));
#pragma unroll
                for (int i = 0; i < ACC; ++i) acc[i] += tmp[i];
            }
        }
        wgmma_wait<0>();
        fence_regs(acc);

        // acc[4j + 2h + e]: row 16 warp + lane/4 + 8h, column 8j + 2 (lane % 4) + e.
        const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
        const int row0 = m0 + cw * 64 + warp * 16 + lane / 4;
        const bool pairs = (N % 2 == 0) && ((reinterpret_cast<size_t>(out) & 7) == 0);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + 8 * h;
            if (row >= M) continue;
            float* c_row = out + (size_t)row * N;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const int col = n0 + 8 * j + 2 * (lane % 4);
                const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
                if (pairs) {
                    if (col < N) {  // N even, col even: the pair is wholly in or out, 8-byte aligned
                        float2* p = reinterpret_cast<float2*>(c_row + col);
                        float2 r;
                        if (b_out == 0.0f) {
                            r.x = a_out * v0; r.y = a_out * v1;
                        } else {
                            const float2 o = *p;
                            r.x = a_out * v0 + b_out * o.x; r.y = a_out * v1 + b_out * o.y;
                        }
                        *p = r;
                    }
                } else {
                    if (col < N) c_row[col] = axpby(v0, a_out, b_out, c_row + col);
                    if (col + 1 < N) c_row[col + 1] = axpby(v1, a_out, b_out, c_row + col + 1);
                }
            }
        }
    }
}

// C^T = B^T A^T without a copy of B (N % 4 == 0, B 16-byte aligned): wgmma's register operand
// (rows n, K-major by construction) is read from the B tile as TMA stored it (k rows of 32-float
// boxes, 128-byte swizzle), and its shared-memory operand is the A tile (rows m, K-major as
// stored). A block computes TM rows of C (the wgmma N side: 256, 128 or 64, so a short M pads
// fewer rows) x 128 columns (64 per consumer warpgroup, the wgmma M side); D[n][m] is stored
// transposed into C. SPLIT3 (tf32x3): A's big and small TF32 parts come from the split copy as two
// tiles; B's are made in registers from the fragment as loaded (big = x rounded, small = x - big
// rounded), so B is never copied; 3 wgmma per k8 into a temporary added to the accumulator per
// K tile, as in sgemm_wgmma_tma.
// B_ASYNC (N % 4 != 0: B's rows are not 16-byte multiples, which TMA can't stride): the producer
// warpgroup's 128 threads copy B's tile from b_rows (K x N, row-major, 16-byte aligned) with 16-byte
// cp.async, one row of the tile as the 33 aligned chunks that cover its 128 columns, into rows of
// BP = 136 floats; row k's columns then start at word mis = (k * N) % 4 = (k % 4)(N % 4) % 4, which
// for a fragment's k = 8 kk + t (+ 4) is the thread's constant (t (N % 4)) % 4. Rows past K are
// zero; chunks past N are not loaded (they reach only D's rows n >= N, never stored); the last
// chunk of B reads only the bytes B has. Each thread arrives on the stage's full barrier when its
// copies land, beside TMA's transaction count for A. No copy of B before the GEMM. 16-byte chunks
// because 4-byte copies into TMA's layout take 4x the instructions (2x slower: docs/findings.md).
// B_BULK (N % 4 != 0, N <= 128: one column tile holds all of B's columns): a K tile of B, 32 whole
// rows, is one contiguous run of 128 N bytes (16-byte aligned, a multiple of 16), so one bulk copy
// (cp.async.bulk, the copy engine, counted on the full barrier like TMA) moves it as stored, rows
// of N floats. The last K tile (fewer than 32 rows) copies its bytes rounded down to 16; the
// producer warpgroup writes the 0-3 floats left and zeros for the rows past K (A's are zero there
// too, but a 0 x inf or 0 x NaN would poison D). Fragment loads read rows of N floats (a 2-4 way
// bank conflict, against the cp.async build's 33 instructions per row of the tile).
// A_RAW (tf32x3): A's raw tile by TMA, split in shared memory by the producer warpgroup (below);
// its 48 KiB of shared-memory traffic per K tile slows a main loop near shared memory's bandwidth
// on wide products, so the launch takes it where N <= 384 (heuristics.py A_SPLIT_SMEM_MAX_N).
template <int TM, int STAGES, bool SPLIT3, int B_LOAD, bool A_RAW, bool SK>
__global__ void __launch_bounds__(wgmma13::THREADS, 1)
sgemm_wgmma_regb(const __grid_constant__ wgmma13::TensorMap tA, const __grid_constant__ wgmma13::TensorMap tB,
                 const __grid_constant__ wgmma13::TensorMap tAs, const float* __restrict__ b_rows,
                 int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                 int kt_per_split, float* __restrict__ partials, float* __restrict__ ws, int sk_tiles,
                 int sk_blocks, int ipb, int extra) {
    using namespace wgmma13;
    constexpr int TN = 128;                        // C columns per block
    constexpr int PARTS = SPLIT3 ? 2 : 1;
    constexpr int A_BYTES = TM * BK * 4;           // TM rows of A, 128 bytes each
    constexpr int A_LOADED = (SPLIT3 && !A_RAW ? 2 : 1) * A_BYTES;   // A bytes TMA brings per stage
    constexpr int B_BOX = 32 * 128;                // one 32 k x 32 n box of B, 4 KiB
    constexpr int BP = 136;                        // B_ASYNC: floats per k row (128 + 8: 16-byte chunks, 8 banks apart)
    constexpr int CHUNKS = TN / 4 + 1;             // B_ASYNC: 16-byte chunks covering 128 columns at any offset
    constexpr bool B_ASYNC = B_LOAD == 1, B_BULK = B_LOAD == 2;   // 0: TMA
    // B_BULK reads up to word 31 N + 127 < 32 x 136 of its stage (N <= 127): the cp.async build's size.
    constexpr int STAGE = PARTS * A_BYTES + (B_LOAD ? BK * BP * 4 : (TN / 32) * B_BOX);
    static_assert(STAGE % 1024 == 0, "every stage's A tile 1024-byte aligned for the swizzle");
    constexpr int ACC = TM / 2;                    // accumulators per consumer thread
    constexpr int GROUP = 8;
    static_assert(TM == 256 || TM == 128 || TM == 64, "wgmma n256 / n128 / n64");
    static_assert(!SPLIT3 || TM <= 128, "tf32x3 keeps a temporary beside the accumulators");
    static_assert(!A_RAW || SPLIT3, "A_RAW splits A for tf32x3");

    extern __shared__ unsigned char smem_raw[];
    const unsigned raw = smem_u32(smem_raw);
    const unsigned base = (raw + 1023u) & ~1023u;
    // mbarriers: full[STAGES] (the consumers wait), empty[STAGES] (the producer waits), and with
    // A_RAW landed[STAGES] (the loads' arrival, before the producer's split).
    const unsigned bars = base + STAGES * STAGE;
    float* const fbase = reinterpret_cast<float*>(smem_raw + (base - raw));

    const int tiles_m = (M + TM - 1) / TM, tiles_n = (N + TN - 1) / TN;
    const int ipt = (K + BK - 1) / BK;             // K tiles of one C tile
    // The block's work: n_iters (C tile, K tile) iterations in tile-major order from (tile0, kq0).
    // Stream-K block b < sk_blocks: its share [start(b), start(b) + ipb (+ 1 for b < extra)) of the
    // stream-K tiles' iterations (tiles 0 .. sk_tiles - 1 in launch order): the end of one tile, whole
    // tiles, the start of another. Otherwise tile sk_tiles + (b - sk_blocks), K tiles [kq0, kq0 +
    // n_iters): split-K gives blockIdx.y K tiles kt_per_split apart; unsplit, all of them.
    // SK: the stream-K build; without it a block has one tile, and the loops below compile to the
    // data-parallel kernel (the segment bookkeeping in its loop cost 10% there: docs/findings.md).
    int tile0, kq0, n_iters;
    if (SK && (int)blockIdx.x < sk_blocks) {
        const int start = blockIdx.x * ipb + min((int)blockIdx.x, extra);
        tile0 = start / ipt;
        kq0 = start - tile0 * ipt;
        n_iters = ipb + ((int)blockIdx.x < extra ? 1 : 0);
    } else {
        tile0 = sk_tiles + blockIdx.x - sk_blocks;
        kq0 = blockIdx.y * kt_per_split;
        n_iters = max(0, min(ipt - kq0, kt_per_split));
    }
    auto origin = [&](int tile, int& m0, int& n0) {   // launch order grouped by 8 tile rows
        int tm, tn;
        tile_grouped_at<GROUP>(tile, tiles_m, tiles_n, tm, tn);
        m0 = tm * TM;
        n0 = tn * TN;
    };
    int m0_first, n0_first;   // the block's first (without SK: only) tile
    origin(tile0, m0_first, n0_first);
    const int wg = threadIdx.x / 128;
    // A split block writes its raw partial tile to its own slice (alpha 1, beta 0: C untouched);
    // splitk_reduce then sums the slices in split order, so the result is bit-identical run to run.
    float* const out = partials ? partials + (size_t)blockIdx.y * M * N : C;
    const float a_out = partials ? 1.0f : alpha, b_out = partials ? 0.0f : beta;

    // The loads' barrier's count: TMA's expect_tx, + each cp.async thread (B_ASYNC), + the other 127
    // producer threads (B_BULK without A_RAW: their last-tile stores ordered by it). With A_RAW the
    // producer's 128 threads arrive on full after their split.
    constexpr unsigned LOADS = B_ASYNC ? 1 + 128 : (B_BULK && !A_RAW) ? 128 : 1;
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bars + 8 * s, A_RAW ? 128 : LOADS);
            mbar_init(bars + 8 * (STAGES + s), 256);
            if (A_RAW) mbar_init(bars + 8 * (2 * STAGES + s), LOADS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        // K tile kt's loads into its stage, counted on bar: A by TMA (big and small parts from the
        // split copy, or with A_RAW the raw tile), B by the build's B_LOAD. Called by all 128 producer
        // threads (the TMA build without A_RAW: thread 0 only).
        auto load = [&](int it, int tile, int kq, unsigned bar) {
            const int s = it % STAGES, k_first = kq * BK;
            int m0 = m0_first, n0 = n0_first;
            if constexpr (SK) origin(tile, m0, n0);
            const unsigned st = base + s * STAGE;
            if constexpr (B_ASYNC) {
                if (threadIdx.x == 0) {
                    mbar_expect_tx(bar, A_LOADED);
                    tma_load(st, tA, bar, k_first, m0);
                    if (SPLIT3 && !A_RAW) tma_load(st + A_BYTES, tAs, bar, k_first, m0);
                }
                const size_t total = (size_t)K * N;  // B's floats: no chunk reads past them
                const unsigned rows = st + PARTS * A_BYTES;
                for (int e = threadIdx.x; e < BK * CHUNKS; e += 128) {
                    const int r = e / CHUNKS, c = e - r * CHUNKS, k = k_first + r;
                    const size_t first = (size_t)k * N + n0;   // B[k][n0]
                    const int mis = (int)(first & 3);
                    if (4 * c - mis >= N - n0) continue;       // wholly past N
                    const size_t at = (first - mis) + 4 * c;   // 16-byte aligned
                    const unsigned bytes = k < K && at < total ? 4u * (unsigned)min((size_t)4, total - at) : 0u;
                    cp_async16(rows + 4 * (r * BP + 4 * c), bytes ? b_rows + at : b_rows, bytes);
                }
                cp_async_arrive(bar);
            } else if constexpr (B_BULK) {
                const int rows = min(BK, K - k_first);
                const float* src = b_rows + (size_t)k_first * N;
                const int floats = rows * N, bulk = (4 * floats) & ~15;
                if (rows < BK) {  // the last K tile
                    float* dst = fbase + s * (STAGE / 4) + PARTS * A_BYTES / 4;
                    for (int i = bulk / 4 + threadIdx.x; i < BK * N; i += 128) dst[i] = i < floats ? src[i] : 0.f;
                }
                if (threadIdx.x == 0) {
                    mbar_expect_tx(bar, A_LOADED + bulk);
                    tma_load(st, tA, bar, k_first, m0);
                    if (SPLIT3 && !A_RAW) tma_load(st + A_BYTES, tAs, bar, k_first, m0);
                    if (bulk) bulk_load(st + PARTS * A_BYTES, src, bulk, bar);
                } else if (!A_RAW) {
                    mbar_arrive(bar);
                }
            } else {
                // B's boxes wholly past N are not loaded: their columns reach only D's rows n >= N,
                // never stored, and loading them held tiny outputs (the 64-row tile's) to 60% of
                // the DRAM bandwidth cuBLAS reaches (40x24x540000: 79 -> 47 us). Only tf32's 64-row
                // build skips them: with the skip ptxas scheduled the other builds' consumer loops
                // differently, 0.82-0.94x on 128-row products with no box to skip (docs/findings.md).
                const int boxes = SPLIT3 || TM != 64 ? TN / 32 : min(TN / 32, (N - n0 + 31) / 32);
                mbar_expect_tx(bar, A_LOADED + boxes * B_BOX);
                tma_load(st, tA, bar, k_first, m0);
                if (SPLIT3 && !A_RAW) tma_load(st + A_BYTES, tAs, bar, k_first, m0);
#pragma unroll
                for (int j = 0; j < TN / 32; ++j)
                    if (j < boxes) tma_load(st + PARTS * A_BYTES + j * B_BOX, tB, bar, n0 + 32 * j, k_first);
            }
        };
        if constexpr (!A_RAW) {
            // Without B_BULK / B_ASYNC's per-thread work only thread 0 has anything to issue.
            if (B_LOAD != 0 || threadIdx.x == 0) {
                for (int it = 0, tile = tile0, kq = kq0; it < n_iters; ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(bars + 8 * (STAGES + s), ((it / STAGES) - 1) & 1);
                    load(it, tile, kq, bars + 8 * s);
                    if (++kq == ipt) { kq = 0; ++tile; }
                }
            }
        } else {
            // A_RAW: A's raw tile lands (landed[s]), then the producer warpgroup splits it in place,
            // big = tf32(x) over x and small = tf32(x - big) into the stage's second A tile (the split
            // copy's values: the same bits), and arrives on full[s]. The split is elementwise, so the
            // 128-byte swizzle TMA wrote holds for both tiles. Loads run STAGES - 1 tiles ahead; tile
            // kt + STAGES - 1 is issued after tile kt's split, so the consumers find tile kt + 1 split
            // while they compute tile kt. The split's stores are generic-proxy writes that wgmma reads
            // through the async proxy: fence.proxy.async before the arrival.
            int tile = tile0, kq = kq0;   // the next load's iteration
            const int ahead = min(STAGES - 1, n_iters);
            for (int j = 0; j < ahead; ++j) {
                if (B_LOAD != 0 || threadIdx.x == 0) load(j, tile, kq, bars + 8 * (2 * STAGES + j));
                if (++kq == ipt) { kq = 0; ++tile; }
            }
            for (int kt = 0; kt < n_iters; ++kt) {
                const int s = kt % STAGES;
                mbar_wait(bars + 8 * (2 * STAGES + s), (kt / STAGES) & 1);
                float4* a4 = reinterpret_cast<float4*>(fbase + s * (STAGE / 4));
#pragma unroll 2
                for (int i = threadIdx.x; i < A_BYTES / 16; i += 128) {
                    const float4 x = a4[i];
                    float4 b, sm;
                    b.x = tf32_round(x.x); b.y = tf32_round(x.y); b.z = tf32_round(x.z); b.w = tf32_round(x.w);
                    sm.x = x.x - b.x; sm.y = x.y - b.y; sm.z = x.z - b.z; sm.w = x.w - b.w;
                    sm.x = tf32_round(sm.x == sm.x ? sm.x : 0.f); sm.y = tf32_round(sm.y == sm.y ? sm.y : 0.f);
                    sm.z = tf32_round(sm.z == sm.z ? sm.z : 0.f); sm.w = tf32_round(sm.w == sm.w ? sm.w : 0.f);
                    a4[i] = b;
                    a4[i + A_BYTES / 16] = sm;
                }
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                mbar_arrive(bars + 8 * s);
                const int j = kt + STAGES - 1, sj = j % STAGES;
                if (j < n_iters) {
                    if (B_LOAD != 0 || threadIdx.x == 0) {
                        if (j >= STAGES) mbar_wait(bars + 8 * (STAGES + sj), ((j / STAGES) - 1) & 1);
                        load(j, tile, kq, bars + 8 * (2 * STAGES + sj));
                    }
                    if (++kq == ipt) { kq = 0; ++tile; }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1;
        const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
        // This thread's fragment rows n (64 cw + 16 warp + g, + 8) sit in box (64 cw + 16 warp) / 32
        // at columns nn and nn + 8 (nn = (16 warp) % 32 + g); k = 8 kk + t (+ 4).
        const int box = (64 * cw + 16 * warp) / 32, nn = (16 * warp) % 32 + g;
        const int n_tile = 64 * cw + 16 * warp + g, mis = (t * (N & 3)) & 3;  // B_ASYNC's row layout
        float acc[ACC];
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
        float tmp[SPLIT3 ? ACC : 1];

        // Word offset (floats) of B^T[n][k] in a stage: box, row k (32 floats), 16-byte chunk
        // swizzled with k % 8.
        auto b_word = [&](int n_in_box, int k) {
            if constexpr (B_ASYNC) return PARTS * A_BYTES / 4 + k * BP + mis + n_tile + (n_in_box - nn);
            if constexpr (B_BULK) return PARTS * A_BYTES / 4 + k * N + n_tile + (n_in_box - nn);
            return PARTS * A_BYTES / 4 + box * (B_BOX / 4) + k * 32 + ((((n_in_box >> 2) ^ (k & 7))) << 2) +
                   (n_in_box & 3);
        };
        // tf32 (not SK) keeps one wgmma group in flight while it loads the next K tile's fragments
        // into a second register set (below); tf32x3 and the stream-K build load them while none
        // is in flight (wait_group 0 ends each tile: tf32x3 adds its temporary to the accumulators
        // there). Rounding: + 0x1000 then the tensor core's truncation of the low 13 bits is round to
        // nearest, ties away, as cvt.rna.
        unsigned frag[BK / 8][4];
        unsigned frag_s[SPLIT3 ? BK / 8 : 1][4];
        // acc[4j + 2h + e] = D[n][m]: n = 64 cw + 16 warp + g + 8h, m = 8j + 2t + e. dst: C (alpha,
        // beta), split-K's slice of the partials (alpha 1, beta 0: C untouched; splitk_reduce sums the
        // slices in split order), or a stream-K block's workspace slot (0: its first tile, 1: its last)
        // holding the whole TM x TN partial tile-local (rows and columns past M, N hold zeros; the fixup
        // reads what exists): bit-identical run to run either way.
        auto store = [&](int tile, bool whole) {
            int m0 = m0_first, n0 = n0_first;
            if constexpr (SK) origin(tile, m0, n0);
            if (SK && !partials && !whole) {
                float* w = ws + ((size_t)blockIdx.x * 2 + (tile == tile0 ? 0 : 1)) * (TM * TN);
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int j = 0; j < TM / 8; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            w[(8 * j + 2 * t + e) * TN + 64 * cw + 16 * warp + g + 8 * h] = acc[4 * j + 2 * h + e];
                return;
            }
            float* const out = partials ? partials + (size_t)blockIdx.y * M * N : C;
            const float a_out = partials ? 1.0f : alpha, b_out = partials ? 0.0f : beta;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int col = n0 + 64 * cw + 16 * warp + g + 8 * h;
                if (col >= N) continue;
#pragma unroll
                for (int j = 0; j < TM / 8; ++j) {
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int row = m0 + 8 * j + 2 * t + e;
                        if (row < M) {
                            float* p = out + (size_t)row * N + col;
                            *p = axpby(acc[4 * j + 2 * h + e], a_out, b_out, p);
                        }
                    }
                }
            }
        };
        // tf32's data-parallel and split-K blocks' epilogue, through shared memory: the stages are
        // free once both consumer warpgroups' last wgmma are done (bar.sync 1 over their 256
        // threads), so each thread writes its accumulators as rows m of a TM x TN tile (pitch TN
        // + 4 floats: both the writes and the row reads below are conflict-free), then the 256
        // threads store whole rows, 16 bytes a thread where N % 4 == 0 and C is 16-byte aligned.
        // Stored from registers, each STG's 64-bit address waited for the one before it (ptxas
        // reused its registers: the epilogue was 30% of 4648x6636x140's samples, long scoreboard).
        // tf32x3 keeps the register stores: with this epilogue it ran 0.93-0.98x on mid and large
        // products (docs/findings.md).
        auto store_staged = [&]() {
            constexpr int P = TN + 4;
            static_assert(TM * P * 4 <= STAGES * STAGE, "the epilogue's tile fits in the stages");
            asm volatile("bar.sync 1, 256;\n" ::: "memory");
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int j = 0; j < TM / 8; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        fbase[(8 * j + 2 * t + e) * P + 64 * cw + 16 * warp + g + 8 * h] = acc[4 * j + 2 * h + e];
            asm volatile("bar.sync 1, 256;\n" ::: "memory");
            float* const out = partials ? partials + (size_t)blockIdx.y * M * N : C;
            const float a_out = partials ? 1.0f : alpha, b_out = partials ? 0.0f : beta;
            const int ct = threadIdx.x - 128, c4 = 4 * (ct % 32), rows = min(TM, M - m0_first);
            const int col = n0_first + c4;
            const bool vec = (N & 3) == 0 && (reinterpret_cast<size_t>(out) & 15) == 0;
#pragma unroll 4
            for (int r = ct / 32; r < rows; r += 8) {
                const float4 v = *reinterpret_cast<const float4*>(fbase + r * P + c4);
                float* p = out + (size_t)(m0_first + r) * N + col;
                if (vec && col + 3 < N) {
                    *reinterpret_cast<float4*>(p) = axpby4(v, a_out, b_out, p);
                } else {
                    const float x[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                    for (int i = 0; i < 4; ++i)
                        if (col + i < N) p[i] = axpby(x[i], a_out, b_out, p + i);
                }
            }
        };
        // B^T's fragments of stage st (and for SPLIT3 their small parts) into F (Fs).
        auto fragments = [&](const float* st, unsigned (&F)[BK / 8][4], unsigned (&Fs)[SPLIT3 ? BK / 8 : 1][4]) {
#pragma unroll
            for (int kk = 0; kk < BK / 8; ++kk) {
                const int k0 = 8 * kk + t;
                const float x[4] = {st[b_word(nn, k0)], st[b_word(nn + 8, k0)],             // (g, t), (g + 8, t)
                                    st[b_word(nn, k0 + 4)], st[b_word(nn + 8, k0 + 4)]};    // (g, t + 4), (g + 8, t + 4)
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    if constexpr (SPLIT3) {
                        const unsigned big = (__float_as_uint(x[r]) + 0x1000u) & 0xffffe000u;
                        const float small = x[r] - __uint_as_float(big);
                        F[kk][r] = big;
                        Fs[kk][r] = __float_as_uint(small == small ? small : 0.f) + 0x1000u;
                    } else {
                        F[kk][r] = __float_as_uint(x[r]) + 0x1000u;
                    }
                }
            }
        };
        if constexpr (!SPLIT3 && !SK) {
            // One wgmma group in flight: K tile kt's fragments load into the register set the
            // group before last read (done at the last wait), while kt - 1's group runs on the
            // other set; kt - 1's stage is released once wait_group 1 sees that group done. The
            // loop steps by two so each set is a fixed set of registers (ptxas keeps the groups
            // overlapped: WARPGROUP.DEPBAR.LE gsb0, 0x1 in the SASS). Waiting for each group before
            // the next tile's loads left the 64-row tile's tensor pipe idle for the load latency:
            // 1.07x faster with it on the held-out rows (docs/findings.md).
            unsigned f1[BK / 8][4];
            auto step = [&](int kt, unsigned (&F)[BK / 8][4]) {
                const int s = kt % STAGES;
                mbar_wait(bars + 8 * s, (kt / STAGES) & 1);
                fragments(fbase + s * (STAGE / 4), F, frag_s);
                const unsigned a = base + s * STAGE;
                fence_regs(acc);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 8; ++kk) wgmma_rs<TM>(acc, F[kk], sw128_desc(a + 32 * kk), 1);
                wgmma_commit();
                fence_regs(acc);
                wgmma_wait<1>();
                fence_regs(acc);
                if (kt > 0) mbar_arrive(bars + 8 * (STAGES + (kt - 1) % STAGES));
            };
            int kt = 0;
#pragma unroll 1
            for (; kt + 1 < n_iters; kt += 2) {
                step(kt, frag);
                step(kt + 1, f1);
            }
            if (kt < n_iters) step(kt, frag);
            wgmma_wait<0>();
            fence_regs(acc);
            store_staged();   // split-K: the slice (zeros for an empty split); else C
            return;
        }
        int tile = tile0, kq = kq0, seg_k0 = kq0;
        for (int kt = 0; kt < n_iters; ++kt) {
            const int s = kt % STAGES;
            if constexpr (SK) {
                if (kq == 0 && kt > 0) {   // a new tile of a stream-K block
#pragma unroll
                    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
                    seg_k0 = 0;
                }
            }
            mbar_wait(bars + 8 * s, (kt / STAGES) & 1);
            fragments(fbase + s * (STAGE / 4), frag, frag_s);
            const unsigned a = base + s * STAGE;
            if constexpr (!SPLIT3) {
                fence_regs(acc);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 8; ++kk) wgmma_rs<TM>(acc, frag[kk], sw128_desc(a + 32 * kk), 1);
                wgmma_commit();
                fence_regs(acc);
                wgmma_wait<0>();
                fence_regs(acc);
            } else {
                const unsigned as = a + A_BYTES;
                fence_regs(tmp);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 8; ++kk) {
                    wgmma_rs<TM>(tmp, frag_s[kk], sw128_desc(a + 32 * kk), kk > 0);   // b_s a_b
                    wgmma_rs<TM>(tmp, frag[kk], sw128_desc(as + 32 * kk), 1);         // b_b a_s
                    wgmma_rs<TM>(tmp, frag[kk], sw128_desc(a + 32 * kk), 1);          // b_b a_b
                }
                wgmma_commit();
                fence_regs(tmp);
                wgmma_wait<0>();
                fence_regs(tmp);
#pragma unroll
                for (int i = 0; i < ACC; ++i) acc[i] += tmp[i];
            }
            mbar_arrive(bars + 8 * (STAGES + s));
            if constexpr (SK) {
                if (kq == ipt - 1 || kt == n_iters - 1) store(tile, seg_k0 == 0 && kq == ipt - 1);   // a segment's end
                if (++kq == ipt) { kq = 0; ++tile; }
            }
        }
        if constexpr (!SK) {   // tf32x3
            wgmma_wait<0>();
            fence_regs(acc);
            store(tile0, true);   // split-K: the slice (zeros for an empty split); else C
        }
    }
}

// Stream-K's second pass, as stage 11's stream_k_fixup: grid (stream-K tiles, TM x 128 / 512); a
// thread owns four elements of one split tile and adds that tile's partials from its blocks'
// workspace slots in block order (the same order every run: bit-identical), then C = alpha * sum +
// beta * C once. A tile one block computed whole is already in C. Tiles split here are few (the
// plan takes stream-K only for a partial wave of unsplit tiles), so one lane per element.
template <int TM>
__global__ void __launch_bounds__(128) regb_stream_k_fixup(int M, int N, int K, float alpha, float beta,
                                                           float* __restrict__ C, const float* __restrict__ ws,
                                                           int ipb, int extra) {
    constexpr int TN = 128;
    const int t = blockIdx.x;
    const StreamKRange range{(K + wgmma13::BK - 1) / wgmma13::BK, ipb, extra};
    int b0, b1;
    range.owners(t, b0, b1);
    if (b0 == b1) return;  // uniform over the block
    int tm, tn;
    tile_grouped_at<8>(t, (M + TM - 1) / TM, (N + TN - 1) / TN, tm, tn);
    const int e = (blockIdx.y * 128 + threadIdx.x) * 4;  // tile-local element
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int b = b0; b <= b1; ++b) {
        const float4 v = *reinterpret_cast<const float4*>(ws + ((size_t)b * 2 + range.slot(b, t)) * (TM * TN) + e);
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    const int row = tm * TM + e / TN, col = tn * TN + e % TN;
    if (row >= M) return;
    const float v[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
    for (int j = 0; j < 4; ++j)
        if (col + j < N) C[(size_t)row * N + col + j] = axpby(v[j], alpha, beta, C + (size_t)row * N + col + j);
}

// Split-K's second pass: C = alpha * (sum of the S partial tiles, in split order) + beta * C.
// One thread per element of C, reading S slices of M*N floats: coalesced, and the fixed order makes
// the sum bit-identical run to run (atomics would not be).
__global__ void __launch_bounds__(256) splitk_reduce(int MN, int splits, float alpha,
                                                     const float* __restrict__ partials, float beta,
                                                     float* __restrict__ C) {
    for (size_t i = (size_t)blockIdx.x * 256 + threadIdx.x; i < (size_t)MN; i += (size_t)gridDim.x * 256) {
        float s = 0.f;
        for (int z = 0; z < splits; ++z) s += partials[(size_t)z * MN + i];
        C[i] = axpby(s, alpha, beta, C + i);
    }
}
