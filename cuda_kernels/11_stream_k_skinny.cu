// Stage 11 - bandwidth-bound paths of the stream-K kernel: one row (M = 1, gemv_row) and a
// matrix times 1-8 vectors (N <= 8, skinny_n). Included by 11_stream_k.cu; stage 11's prepare
// picks the path (launch.py, stream_k_path: N <= 8 -> skinny_n, else M = 1 -> gemv, else the
// stream-K tile plan) and names it in the row's config. skinny_n has a second, short-K build
// (skinny_short, option skinny_b=resident, K <= 256; its header is at its template, below),
// the default where K <= 256 (launch.py, _resolve_skinny_b).
//
// Bottleneck removed: a tile kernel on a product that is a stream of one operand. With N <= 8 a
// GEMM does at most 2*8 flops per 4-byte element of A (4 flops per byte) and with M = 1 half a
// flop per byte of B: the time is that operand's bytes over DRAM bandwidth. The tile kernel's
// narrowest tile (32 rows or columns) spends 4-32x the FFMAs on empty rows, holds a full tile
// pipeline per block and reaches ~1.5 of the 4.3 TB/s a device copy reaches (the issue's H200
// numbers: 63.6% of cuBLAS at M = 1, 90.5% at N <= 8, worst 38%). Here each byte of the big
// operand is read once with 16-byte loads, every block keeps 16-64 KiB of loads in flight, and K
// is split over blocks (compare.families.decompose.skinny_split) when the output alone gives too
// few blocks to fill the SMs.
// Still there: the second launch that sums the K ranges' partials (skinny_sum_splits: fixed split
// order, bit-identical run to run, as the stream-K fixup is), and the shared-memory reduction of a
// block's warps / lanes at the end (no warp shuffles: the CPU emulator runs threads as fibers that
// meet only at __syncthreads, and it must run these kernels).
// Cost: a workspace of splits x (output) floats when K is split (written and read once: 2 words
// per output element per split, < 2% of the operand's bytes with the split model's K ranges) and
// that second launch. skinny_n reads B (K x N, small) into shared memory transposed, once per block
// of 32 rows (N <= 4) or 128 (64 in the scalar build, N > 4): at most 1/8 of A's bytes again, from L2.
// Requirement: none. 16-byte loads of B's rows where N % 4 == 0 and B is 16-byte aligned
// (gemv_row), of A's rows where K % 4 == 0 and A is aligned (skinny_n); predicated scalar loads
// otherwise (VEC = false). fp32 only (FFMA), like the rest of stage 11.

// One row: C[0, n] = alpha * sum_k a[k] * B[k, n] + beta * C[0, n].
// Grid (ceil(N / 128), splits); 32 * WARPS threads. A block owns 128 columns and the K range
// [blockIdx.y * k_per_split, + k_per_split): lane l of warp w reads rows w, w + WARPS, ... of that
// range, 4 columns each (VEC: one 16-byte load of columns 4l..4l+3; scalar: columns l, l+32, l+64,
// l+96, each warp load 128 contiguous bytes), UNROLL rows in flight per thread (8 warps x 4 rows x
// 16 bytes = 16 KiB a block). a[k] is the same address for the whole warp (one broadcast load).
// The warps' partial sums meet in shared memory and are added in warp order; with one K range the
// result goes to C, else the raw range sum to ws[range][n] for skinny_sum_splits.
template <int WARPS, int UNROLL, bool VEC>
__global__ void __launch_bounds__(32 * WARPS)
gemv_row(int N, int K, int k_per_split, float alpha, const float* __restrict__ a, const float* __restrict__ B,
         float beta, float* __restrict__ C, float* __restrict__ ws) {
    constexpr int COLS = 128;
    __shared__ float red[WARPS * COLS];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    const int n0 = blockIdx.x * COLS;
    const int k_lo = blockIdx.y * k_per_split;
    const int k_hi = min(K, k_lo + k_per_split);
    int cl[4];  // block-local columns of this thread's 4 accumulators
#pragma unroll
    for (int j = 0; j < 4; ++j) cl[j] = VEC ? 4 * lane + j : lane + 32 * j;
    bool live[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) live[j] = n0 + cl[j] < N;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    const float* bcol = B + n0 + cl[0];
    int k = k_lo + w;
    for (; k + WARPS * (UNROLL - 1) < k_hi; k += WARPS * UNROLL) {
        float x[UNROLL], v[UNROLL][4];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {  // every load first: UNROLL rows in flight
            const int kk = k + WARPS * u;
            x[u] = a[kk];
            const float* row = bcol + (size_t)kk * N;
            if (VEC) {
                const float4 q = live[0] ? ld4(row) : make_float4(0.f, 0.f, 0.f, 0.f);
                v[u][0] = q.x; v[u][1] = q.y; v[u][2] = q.z; v[u][3] = q.w;
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) v[u][j] = live[j] ? row[32 * j] : 0.f;
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[j] += x[u] * v[u][j];
    }
    for (; k < k_hi; k += WARPS) {  // the range's last < WARPS * UNROLL rows
        const float x = a[k];
        const float* row = bcol + (size_t)k * N;
        if (VEC) {
            if (live[0]) {
                const float4 q = ld4(row);
                acc[0] += x * q.x; acc[1] += x * q.y; acc[2] += x * q.z; acc[3] += x * q.w;
            }
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (live[j]) acc[j] += x * row[32 * j];
        }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) red[w * COLS + cl[j]] = acc[j];
    __syncthreads();
    const int t = threadIdx.x;
    if (t >= COLS || n0 + t >= N) return;  // after the block's only barrier
    float s = red[t];
    for (int i = 1; i < WARPS; ++i) s += red[i * COLS + t];  // warp order: fixed
    const int n = n0 + t;
    if (gridDim.y > 1)
        ws[(size_t)blockIdx.y * N + n] = s;
    else
        C[n] = axpby(s, alpha, beta, C + n);
}

// A matrix times NB-wide vectors (N <= NB <= 8): C[m, n] = alpha * sum_k A[m, k] * B[k, n] + beta * C.
// Grid (ceil(M / ROWS), splits); 256 threads (8 warps); builds: registry.SKINNY_BUILDS. LPR lanes
// share a row of A, so one warp load covers RPW = 32 / LPR rows; a thread owns R of them (rows
// row0 + RPW r) and the block ROWS = 8 R RPW. The block walks its K range in chunks of KC = LPR E:
// lane q (of the row's LPR) reads, of each of its R rows, k = 4 LPR j + 4q..+3 (VEC: E / 4 16-byte
// loads; scalar: k = q + LPR e, e < E), so each warp load reads 4 LPR contiguous floats of each of
// RPW rows (512 bytes of one row at LPR = 32, 128 bytes of 4 rows at LPR = 8: whole 128-byte lines
// either way). B's chunk (KC x N, contiguous in memory) is copied transposed into shared memory by
// cp.async (columns n >= N and rows past the range zero-filled), double-buffered: the next chunk's
// copy and its A loads (not in the scalar builds of NB = 2 and 4 below sm_90) are issued before
// this chunk is computed; row n of the copy is KC + 4 floats long (the copy's writes spread over
// the banks) and a lane's read of its 4 k's of one column is one 16-byte load.
// Each B value read serves the thread's R rows; a warp's read of one column touches LPR distinct
// 16-byte slots (the RPW row groups read the same ones: a broadcast), so shared memory serves
// NB / (R RPW) bytes per byte of A: 4 at NB = 8 with LPR = 32, R = 2 (each load 4 wavefronts),
// 0.5 with LPR = 8, R = 4 (one wavefront). The first spent most of the L1/shared-memory pipe the A
// loads share: ncu at 45558x5x5236 on an H200, 58% of DRAM bandwidth with L1/TEX 60% busy.
// The LPR lanes' partial sums of each (row, column) meet in shared memory, added in lane order.
// The second layout ran N = 5-8 1.35x faster on its tuning shapes and 1.154x on a fresh draw
// (results/h200/skinny-lanes/); where its 128-row blocks would sit idle (small M, or too few K
// ranges to fill the SMs) the first, 16 rows a block, runs (heuristics.skinny_build).
template <int NB, int R, int LPR, int E, bool VEC>
__global__ void __launch_bounds__(256, 2)
skinny_n(int M, int N, int K, int k_per_split, float alpha, const float* __restrict__ A,
         const float* __restrict__ B, float beta, float* __restrict__ C, float* __restrict__ ws) {
    constexpr int WARPS = 8, RPW = 32 / LPR, ROWS = WARPS * R * RPW, KC = LPR * E, KP = KC + 4;
    constexpr int STAGE = NB * KP;
    constexpr int RED = ROWS * NB * (LPR + 1);  // LPR lane partials per output, padded (no bank conflicts)
    constexpr int SMEM = 2 * STAGE > RED ? 2 * STAGE : RED;
    constexpr int COPIES = (NB * KC + 255) / 256;  // copy_b's passes of 256 threads over a chunk
    static_assert(NB >= 1 && NB <= 8 && (LPR == 8 || LPR == 32) && E % 4 == 0, "builds: NB 1-8, 8 or 32 lanes a row");
    __shared__ __align__(16) float smem[SMEM];
    const int tid = threadIdx.x, lane = tid % 32, w = tid / 32, q = LPR == 32 ? lane : lane % LPR;
    // This thread's rows: row0 + RPW r, r < R (one load instruction covers RPW consecutive rows);
    // lrow0: the first one's index in the block
    const int lrow0 = w * R * RPW + (LPR == 32 ? 0 : lane / LPR);
    const int row0 = blockIdx.x * ROWS + lrow0;
    const int k_lo = blockIdx.y * k_per_split;
    const int k_hi = min(K, k_lo + k_per_split);
    const int chunks = cdiv(k_hi - k_lo, KC);

    // Copy chunk c of B transposed into stage s: smem[s][n][kk] = B[k_lo + c*KC + kk][n].
    auto copy_b = [&](int c, int s) {
        float* dst = smem + s * STAGE;
        const int kc0 = k_lo + c * KC;
#pragma unroll
        for (int i = 0; i < COPIES; ++i) {
            const int e = tid + 256 * i;
            const int kk = e / NB, n = e % NB;
            const bool valid = n < N && kc0 + kk < k_hi;
            if ((NB * KC) % 256 == 0 || e < NB * KC) cp_async4(dst + n * KP + kk, valid ? B + (size_t)(kc0 + kk) * N + n : B, valid);
        }
        cp_async_commit();
    };

    float acc[R][NB];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int n = 0; n < NB; ++n) acc[r][n] = 0.f;

    // Chunk c's A values into v: element e of row r is k = kc0 + 4 LPR (e / 4) + 4 q + e % 4
    // (VEC) or kc0 + q + LPR e (scalar); zero past the range and below the last row.
    auto load_a = [&](int c, float (&v)[R][E]) {
        const int kc0 = k_lo + c * KC;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int row = row0 + RPW * r;
            const float* arow = A + (size_t)row * K + kc0;
            if (VEC) {
#pragma unroll
                for (int j = 0; j < E / 4; ++j) {
                    const int kl = 4 * LPR * j + 4 * q;
                    const float4 x = (row < M && kc0 + kl < k_hi) ? ld4(arow + kl) : make_float4(0.f, 0.f, 0.f, 0.f);
                    v[r][4 * j] = x.x; v[r][4 * j + 1] = x.y; v[r][4 * j + 2] = x.z; v[r][4 * j + 3] = x.w;
                }
            } else {
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    const int kl = q + LPR * e;
                    v[r][e] = (row < M && kc0 + kl < k_hi) ? arow[kl] : 0.f;
                }
            }
        }
    };

    // Software pipeline: chunk c + 1's A loads are issued, with its B copy, before chunk c is
    // computed, so a block keeps two chunks of loads in flight across its barriers.
    // Below sm_90 the scalar builds of NB = 2 and 4 load chunk c where it is used: holding 2 x 32
    // scalars and their predicates spilled there (sm_80, 4-16 bytes); NB = 1 and 8 fit.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr bool PIPE = true;
#else
    constexpr bool PIPE = VEC || NB == 1 || NB == 8;
#endif
    float av[R][E], nx[R][E];
    if (PIPE) load_a(0, nx);
    copy_b(0, 0);
    for (int c = 0; c < chunks; ++c) {
        if (PIPE) {
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int e = 0; e < E; ++e) av[r][e] = nx[r][e];
        }
        if (c + 1 < chunks) {
            copy_b(c + 1, (c + 1) % 2);
            if (PIPE) load_a(c + 1, nx);
        } else {
            cp_async_commit();  // an empty group: wait<1> below means "chunk c has landed" on every pass
        }
        if (!PIPE) load_a(c, av);
        cp_async_wait<1>();
        __syncthreads();  // chunk c of B is in shared memory for every thread
        const float* sb = smem + (c % 2) * STAGE;
#pragma unroll
        for (int n = 0; n < NB; ++n) {
            float bv[E];
            if (VEC) {
#pragma unroll
                for (int j = 0; j < E / 4; ++j) {
                    const float4 x = ld4(sb + n * KP + 4 * LPR * j + 4 * q);
                    bv[4 * j] = x.x; bv[4 * j + 1] = x.y; bv[4 * j + 2] = x.z; bv[4 * j + 3] = x.w;
                }
            } else {
#pragma unroll
                for (int e = 0; e < E; ++e) bv[e] = sb[n * KP + q + LPR * e];
            }
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int e = 0; e < E; ++e) acc[r][n] += av[r][e] * bv[e];
        }
        __syncthreads();  // every thread is done with stage c % 2 before chunk c + 2 is copied into it
    }
    cp_async_wait<0>();  // the last (empty) group

    // The lanes' partials of output (local row, n) at smem[(row * NB + n) * (LPR + 1) + q]; the B
    // stages are free (the loop ended on a barrier).
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int n = 0; n < NB; ++n)
            smem[((lrow0 + RPW * r) * NB + n) * (LPR + 1) + q] = acc[r][n];
    __syncthreads();
    for (int o = tid; o < ROWS * NB; o += 256) {
        const int row = blockIdx.x * ROWS + o / NB, n = o % NB;
        if (row >= M || n >= N) continue;
        const float* p = smem + o * (LPR + 1);
        float s = p[0];
        for (int l = 1; l < LPR; ++l) s += p[l];  // lane order: fixed
        const size_t at = (size_t)row * N + n;
        if (gridDim.y > 1)
            ws[(size_t)blockIdx.y * M * N + at] = s;
        else
            C[at] = axpby(s, alpha, beta, C + at);
    }
}

// The K ranges' partials summed in a fixed order (bit-identical run to run), alpha and beta once:
// C[i] = alpha * (ws[0][i] + ws[1][i] + ...) + beta * C[i] for i < count (C not read when beta == 0).
// Grid ceil(count / COLS), COLS * LANES threads: thread (lane, c) of a block sums ranges lane,
// lane + LANES, ... of output blockIdx.x * COLS + c in range order, then lane 0 adds the LANES sums
// in lane order. LANES = 32 where there are many ranges (a single row of 128 columns with K split
// 512 ways: one thread walking 512 partials, 4 loads in flight, is ~60 us of latency against the
// 21 us the product takes); LANES = 1 otherwise (many outputs, a few ranges each).
template <int COLS, int LANES>
__global__ void __launch_bounds__(COLS * LANES)
skinny_sum_splits(int count, int splits, float alpha, const float* __restrict__ ws, float beta, float* __restrict__ C) {
    __shared__ float lane_sums[LANES * COLS];
    const int c = threadIdx.x % COLS, lane = threadIdx.x / COLS;
    const int i = blockIdx.x * COLS + c;
    float s = 0.f;
    if (i < count) {
#pragma unroll 4  // loads in flight; the adds stay in range order
        for (int p = lane; p < splits; p += LANES) s += ws[(size_t)p * count + i];
    }
    if (LANES > 1) {
        lane_sums[lane * COLS + c] = s;
        __syncthreads();
        if (lane != 0) return;
        for (int l = 1; l < LANES; ++l) s += lane_sums[l * COLS + c];  // lane order: fixed
    }
    if (i < count) C[i] = axpby(s, alpha, beta, C + i);
}

// skinny_n's short-K build, skinny_short (option skinny_b=resident; K <= 256, N <= 8).
// Bottleneck removed: skinny_n's fixed costs per block of rows where K is short. At K <= 256 a
// skinny_n block streams one 256-wide chunk of A (16 KiB for its 16 rows at N = 8) and for it
// copies B's whole chunk from L2 into shared memory (8 KiB at N = 8, half the A bytes again),
// waits on its barriers, and sums 32 lane partials per output through shared memory (16 x 8 x 33
// floats written and read, 16896 bytes per 16 KiB of A): a long K spreads these over many chunks,
// a short K pays them every 16 KiB. Measured on an H100 (results/h100/skinny/report.md, skinny_n):
// 56.2% of a device copy's bandwidth at 131072x8x256, 67.0% at 1000000x2x100. Here B is copied
// once per persistent block (grid = min(row groups, SMs x 2); at 131072x8x256 a block streams
// ~500 KiB of A for its one 8 KiB copy), the next group's A loads are in flight while a group is
// computed, and L = 4 or 8 lanes per row (the fewest whose 32 k's each cover K) leave L partials
// per output: 8 per output at N = 8, K = 256, 8 KiB written and read per 32 KiB of A (a quarter).
// Still there: that reduction and its barrier (one per group of 32-64 rows), and B read from
// shared memory, 2 bytes per byte of A at N = 8 (each B value read serves the warp's 32 / L rows).
// Cost: 26 KiB of shared memory per block at N = 8 (B padded, two reduction buffers), 105-118
// registers (2 blocks per SM); the scalar builds keep one group of loads in flight, not two.
// Against skinny_n on a 4x H200 host (results/h200x4/skinny-short/): 1.18-1.96x on three tunable
// short-K shapes, 0.98x at N = 1 (65536x1x256); 131072x8x256 at 59.6% of a device copy (was 41.9%).
// Requirement: K <= 256 (skinny_b=resident refuses more), N <= 8; 16-byte loads of A's rows where
// K % 4 == 0 and A is 16-byte aligned, predicated scalar loads otherwise (VEC = false). Why 256:
// a thread holds 32 of a row's A values twice (this group's and the next's, 105-118 of the 128
// registers 2 blocks per SM allow), so its 8 lanes cover 256; a longer row needs more lanes (more
// partials per output) or a K loop, and from 512 on skinny_n spreads its per-block costs over 2+ chunks.
//
// Layout ("resident" B): K <= 32 L (256 at L = 8),
// N <= NB <= 8. B's whole K x N (<= 8 KiB) is read into shared memory once per block, transposed
// (row n of the copy is KMAX + 4 floats: the 4-float pad staggers the copy's writes over the banks),
// zero past K and N; the block is persistent: grid = min(row groups, SMs x 2), block b computes
// row groups b, b + gridDim.x, ... of ROWS = 256 / L rows each. Thread t owns row t / L of the group
// and lane l = t % L of it: 8 slots of 4 k's, k = 4 L j + 4 l + i (VEC: one 16-byte load per slot,
// a warp instruction reads 4 L contiguous floats of each of its 32 / L rows) or k = l + L e, e < 32
// (scalar: L contiguous floats per row per instruction). The next group's A loads are issued before
// this group is computed (VEC), so each thread keeps a group in flight while it computes (4 KiB per warp,
// up to 32 KiB a block). Each B value read from shared memory serves the warp's 32 / L rows (one
// address for all of them: a broadcast), NB / (32 / L) shared bytes per byte of A: 2 at NB = 8.
// The L lane partials of each (row, n) meet in shared memory and are added in lane order (fixed:
// bit-identical run to run), into one of two buffers by group parity so one barrier a group
// separates a group's writes from its reads and the previous reads from the next writes.
template <int NB, int L, bool VEC>
__global__ void __launch_bounds__(256, 2)
skinny_short(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
             float beta, float* __restrict__ C) {
    constexpr int THREADS = 256, ROWS = THREADS / L, S = 8, KMAX = 4 * S * L, KP = KMAX + 4;
    // L partials per output (row-major: output o = row * NB + n), padded to L + 1: a warp's reads of
    // 32 outputs' partials stride L + 1 words, conflict-free
    constexpr int RED = ROWS * NB * (L + 1);
    static_assert(NB >= 1 && NB <= 8 && (L == 4 || L == 8), "builds: NB 1, 2, 4, 8; L 4 or 8");
    __shared__ __align__(16) float sb[NB * KP];
    __shared__ float red[2][RED];
    const int tid = threadIdx.x, r = tid / L, lane = tid % L;
    const int groups = cdiv(M, ROWS);

    // Group g's A values of this thread's row; zero past K and below the last row.
    auto load_a = [&](int g, float (&v)[4 * S]) {
        const int row = g * ROWS + r;
        const bool live = g < groups && row < M;
        const float* arow = A + (size_t)row * K;
        if (VEC) {
#pragma unroll
            for (int j = 0; j < S; ++j) {
                const int k = 4 * L * j + 4 * lane;
                const float4 q = (live && k < K) ? ld4(arow + k) : make_float4(0.f, 0.f, 0.f, 0.f);
                v[4 * j] = q.x; v[4 * j + 1] = q.y; v[4 * j + 2] = q.z; v[4 * j + 3] = q.w;
            }
        } else {
#pragma unroll
            for (int e = 0; e < 4 * S; ++e) {
                const int k = lane + L * e;
                v[e] = (live && k < K) ? arow[k] : 0.f;
            }
        }
    };

    // Software pipeline (VEC builds): the next group's loads are issued before this group is
    // computed. The scalar builds load a group where it is used: holding 2 x 32 scalars and their
    // predicates spilled there (sm_90, 76-104 bytes, every NB at L = 8).
    constexpr bool PIPE = VEC;
    float nx[4 * S], av[4 * S];
    int g = blockIdx.x;
    if (PIPE) load_a(g, nx);  // the first group's loads go out before B's copy
    for (int e = tid; e < NB * KMAX; e += THREADS) {
        const int kk = e / NB, n = e % NB;
        sb[n * KP + kk] = (n < N && kk < K) ? B[(size_t)kk * N + n] : 0.f;
    }
    __syncthreads();  // B is in shared memory for every thread
    for (int buf = 0; g < groups; g += gridDim.x, buf ^= 1) {
        if (PIPE) {
#pragma unroll
            for (int e = 0; e < 4 * S; ++e) av[e] = nx[e];
            load_a(g + gridDim.x, nx);  // in flight while this group is computed
        } else {
            load_a(g, av);
        }
        float acc[NB];
#pragma unroll
        for (int n = 0; n < NB; ++n) acc[n] = 0.f;
#pragma unroll
        for (int n = 0; n < NB; ++n) {
            const float* bn = sb + n * KP;
            if (VEC) {
#pragma unroll
                for (int j = 0; j < S; ++j) {
                    if (4 * L * j >= K) break;  // uniform: slots past K hold zeros
                    const float4 q = ld4(bn + 4 * L * j + 4 * lane);
                    acc[n] += av[4 * j] * q.x;
                    acc[n] += av[4 * j + 1] * q.y;
                    acc[n] += av[4 * j + 2] * q.z;
                    acc[n] += av[4 * j + 3] * q.w;
                }
            } else {
#pragma unroll
                for (int e = 0; e < 4 * S; ++e) {
                    if (L * e >= K) break;
                    acc[n] += av[e] * bn[lane + L * e];
                }
            }
        }
        float* rb = red[buf];
#pragma unroll
        for (int n = 0; n < NB; ++n) rb[(r * NB + n) * (L + 1) + lane] = acc[n];
        __syncthreads();  // the group's partials are in red[buf]; red[buf ^ 1]'s readers are done
        for (int o = tid; o < ROWS * NB; o += THREADS) {
            const int rr = o / NB, n = o % NB, row = g * ROWS + rr;  // consecutive threads: consecutive C
            if (row >= M || n >= N) continue;
            const float* p = rb + o * (L + 1);
            float s = p[0];
#pragma unroll
            for (int l = 1; l < L; ++l) s += p[l];  // lane order: fixed
            const size_t at = (size_t)row * N + n;
            C[at] = axpby(s, alpha, beta, C + at);
        }
    }
}
