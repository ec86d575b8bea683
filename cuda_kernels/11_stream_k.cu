// Stage 11 - stream-K: the CUDA family's general-purpose kernel. The MAC-loop iterations (one
// BK step of one output tile) of the stream-K tiles are split evenly over a grid sized to the
// SMs; the remaining tiles run data-parallel in whole waves (Osama et al., PPoPP'23, "two-tile
// stream-K + data-parallel" hybrid; plan in compare/families/decompose.py).
//
// Bottleneck removed: wave quantization. A data-parallel grid runs in waves of (SMs x blocks
// per SM) tiles, and the last, partial wave leaves SMs idle: 1000^3 with 128x128 tiles is 64
// tiles for 132 SMs (a quarter of the 264 slots busy); 3000x5000x2000 is 24x40 = 960 tiles =
// 7.27 waves of 132. Split-K (stage 10) fixes only the few-tiles case, with one split count for
// every tile; stream-K gives every block the same number of iterations whatever the tile count,
// so the last wave is as full as the others. Measured on an H100 (fp32, % of cuBLAS measured in
// the same run, `--opt cuda.11_stream_k:mode=dp` = this kernel without stream-K): 1000^3 (64
// tiles) 18.9 -> 25.9 TFLOP/s (58% -> 79%); 5003x1021x2039 (320 tiles, 1.2 waves) 34.5 -> 39.6
// (79% -> 90%); 128x4096x11008 (32 tiles) 10.6 -> 41.2 (23% -> 87%).
// Tile per shape (launch.py, stream_k_tile): 128x128x16 (stages 09/10's warp tile); smaller
// tiles where a 128-row (-column) tile would be mostly empty FFMAs (M or N <= 32 or 64); and
// 64x128x16 below one wave of 128x128 tiles or where those leave > 5% of their rows empty.
//
// Fixup of split tiles: a stream-K block's range starts and ends at arbitrary iterations, so it
// covers at most two partial tiles (its first and its last) and whole tiles in between. Whole
// tiles get the usual alpha/beta epilogue. Deterministic variant: a partial tile goes to the
// block's workspace slot (slot 0: its first tile, slot 1: its last) and a second kernel,
// stream_k_fixup, adds a tile's partials in a fixed order (the same order every run) and applies
// alpha and beta once: bit-identical run to run. Atomic variant: stream_k_prescale makes
// C = beta*C on the split tiles first, then the partials are atomicAdd-ed (no workspace, order
// of additions, so the last bits, not fixed).
// A tile split over hundreds of blocks (long K, few tiles) has its partials summed by 8 lanes
// per column (stream_k_fixup below): one thread walking 528 partials made the fixup 185 us of a
// 590 us run at 64x64x1048576 (ncu, results/h100/explore).
// Cost: registers and shared memory of stage 09 per block (<= 128 registers, 32.5 KiB at
// 128x128x16); the partial round trip of split tiles (<= 2 tiles per stream-K block, written and
// read once) and one extra launch, only when the plan has stream-K tiles.
// Requirement: none (VEC=false instantiation for K % 4 != 0 or N % 4 != 0, like stages 08-10).
#include "common.cuh"
#include "warp_tile.cuh"
#include "09_double_buffered.cu"

template <int BM, int BN, int BK, int STAGES, int WN, bool VEC, bool ATOMIC>
__global__ void __launch_bounds__(WarpTile<BM, BN, BK, WN>::THREADS, 512 / WarpTile<BM, BN, BK, WN>::THREADS)
sgemm_stream_k(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
               float beta, float* __restrict__ C, float* __restrict__ ws, int sk_tiles, int sk_blocks,
               int ipb, int extra) {
    using G = WarpTile<BM, BN, BK, WN>;
    __shared__ __align__(16) float smem[STAGES * G::STAGE];
    const int tiles_m = cdiv(M, BM), tiles_n = cdiv(N, BN);
    const int ipt = cdiv(K, BK);
    const int tid = threadIdx.x;
    int tr, tc;
    thread_origin<G>(tid, tr, tc);
    float acc[8][G::TN];
    const int b = blockIdx.x;
    // One loop for both kinds of block (one inlined main loop: two would not fit 128 registers).
    // Data-parallel block: the iterations of one whole tile, after the stream-K tiles in launch
    // order. Stream-K block: its share of the stream-K tiles' iterations.
    const StreamKRange range{ipt, ipb, extra};
    const bool dp = b >= sk_blocks;
    const int first = dp ? (sk_tiles + (b - sk_blocks)) * ipt : range.start(b);
    const int end = dp ? first + ipt : first + ipb + (b < extra ? 1 : 0);
    const int first_tile = first / ipt;
    for (int it = first; it < end;) {  // uniform over the block
        const int t = it / ipt;
        const int k_it0 = it - t * ipt;
        const int k_it1 = min(ipt, k_it0 + (end - it));
        if (it != first) __syncthreads();  // the previous tile's last stage is read by slower warps
        int tm, tn;
        tile_grouped_at<8>(t, tiles_m, tiles_n, tm, tn);
        const int m0 = tm * BM, n0 = tn * BN;
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < G::TN; ++j) acc[i][j] = 0.f;
        mainloop_double_buffered<BM, BN, BK, STAGES, VEC, WN>(acc, smem, M, N, K, A, B, m0, n0, k_it0 * BK,
                                                              min(K, k_it1 * BK), tid, tr, tc);
        if (k_it0 == 0 && k_it1 == ipt) {
            epilogue_store<VEC>(acc, M, N, alpha, beta, C, m0, n0, tr, tc);
        } else if (ATOMIC) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const int row = m0 + acc_row(tr, i);
                if (row >= M) continue;
#pragma unroll
                for (int j = 0; j < G::TN; ++j) {
                    const int col = n0 + acc_col(tc, j);
                    if (col < N) atomicAdd(C + (size_t)row * N + col, alpha * acc[i][j]);
                }
            }
        } else {
            // The whole BM x BN partial, tile-local row-major, rows/columns past M, N included
            // (they hold zeros): the fixup reads only what exists.
            float* w = ws + ((size_t)b * 2 + (t == first_tile ? 0 : 1)) * (BM * BN);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int h = 0; h < G::TN / 4; ++h)
                    st4(w + acc_row(tr, i) * BN + acc_col(tc, 4 * h),
                        make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]));
        }
        it += k_it1 - k_it0;
    }
}

// Deterministic fixup: grid (stream-K tiles, BM*BN / (4*COLS)), COLS = THREADS / LANES. A block
// owns COLS float4 columns of one tile; its LANES lanes split that tile's partials: lane l sums
// partials b0+l, b0+l+LANES, ... in block order, then lane 0 adds the LANES sums in lane order.
// Every addition happens in the same order on every run (bit-identical), and a tile split over
// hundreds of blocks (long K, few tiles) is read with LANES times more loads in flight: with
// one thread per float4 walking all 528 partials of 64x64x1048576, the fixup took 185 us of a
// 590 us run (ncu, results/h100/explore). A tile that one block computed whole is already in C.
// C = alpha * (sum of the pieces) + beta * C.
template <int BM, int BN, bool VEC, int THREADS, int LANES>
__global__ void __launch_bounds__(THREADS)
stream_k_fixup(int M, int N, int K, float alpha, float beta, float* __restrict__ C, const float* __restrict__ ws,
               int ipb, int extra, int bk) {
    constexpr int COLS = THREADS / LANES;
    static_assert(THREADS % LANES == 0 && (BM * BN) % (4 * COLS) == 0, "the grid's y covers a tile exactly");
    __shared__ __align__(16) float lane_sums[LANES * COLS * 4];
    const int t = blockIdx.x;
    const StreamKRange range{cdiv(K, bk), ipb, extra};
    int b0, b1;
    range.owners(t, b0, b1);
    if (b0 == b1) return;  // uniform over the block
    int tm, tn;
    tile_grouped_at<8>(t, cdiv(M, BM), cdiv(N, BN), tm, tn);
    const int lane = threadIdx.x / COLS, c4 = threadIdx.x % COLS;
    const int e = (blockIdx.y * COLS + c4) * 4;  // tile-local element (the workspace holds whole tiles)
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4  // independent loads in flight; the adds stay in block order
    for (int b = b0 + lane; b <= b1; b += LANES) {
        const float4 v = ld4(ws + ((size_t)b * 2 + range.slot(b, t)) * (BM * BN) + e);
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    float* mine = lane_sums + (lane * COLS + c4) * 4;
    mine[0] = s.x; mine[1] = s.y; mine[2] = s.z; mine[3] = s.w;
    __syncthreads();
    if (lane != 0) return;
    for (int l = 1; l < LANES; ++l) {  // lane order: fixed
        const float* o = lane_sums + (l * COLS + c4) * 4;
        s.x += o[0]; s.y += o[1]; s.z += o[2]; s.w += o[3];
    }
    const int row = tm * BM + e / BN, col = tn * BN + e % BN;
    if (row >= M || col >= N) return;
    float* c = C + (size_t)row * N + col;
    if (VEC) {  // N % 4 == 0: the four columns exist together
        st4(c, axpby4(s, alpha, beta, c));
    } else {
        const float v[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (col + j < N) c[j] = axpby(v[j], alpha, beta, c + j);
    }
}

// Atomic variant's first step: C = beta*C on the split tiles (0 when beta == 0: C is not read).
// Grid (stream-K tiles, BM*BN / (4*THREADS)): one thread per four elements.
template <int BM, int BN, int THREADS>
__global__ void __launch_bounds__(THREADS)
stream_k_prescale(int M, int N, int K, float beta, float* __restrict__ C, int ipb, int extra, int bk) {
    static_assert((BM * BN) % (4 * THREADS) == 0, "the grid's y covers a tile exactly");
    const int t = blockIdx.x;
    const StreamKRange range{cdiv(K, bk), ipb, extra};
    int b0, b1;
    range.owners(t, b0, b1);
    if (b0 == b1) return;
    int tm, tn;
    tile_grouped_at<8>(t, cdiv(M, BM), cdiv(N, BN), tm, tn);
    const int e = (blockIdx.y * THREADS + threadIdx.x) * 4;
    const int row = tm * BM + e / BN, col = tn * BN + e % BN;
    if (row >= M) return;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (col + j < N) {
            float* c = C + (size_t)row * N + col + j;
            *c = beta == 0.0f ? 0.0f : beta * *c;
        }
    }
}

// The bandwidth-bound paths (one row; N <= 8) that stage 11's prepare picks for those shapes.
#include "11_stream_k_skinny.cu"
