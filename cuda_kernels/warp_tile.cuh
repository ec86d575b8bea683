// warp_tile.cuh: the block/warp/thread geometry of stages 08-10 and the pieces they share
// (global -> register fetch, register -> shared store, fragment loads, epilogues).
//
// Block tile BM x BN, K step BK. 8 warps of 32x64 (4 along M x 2 along N for 128x128).
// Inside a warp the lanes form a 4 (M) x 8 (N) grid, lane = lr*8 + lc, and each thread owns
// an 8x8 patch made of 2x2 groups of 4x4:
//     rows  wm + {0,16} + lr*4 + 0..3      cols  wn + {0,32} + lc*4 + 0..3
// Why this shape: every operand load is one LDS.128 (4 contiguous floats), and a warp's load
// touches few distinct addresses: 4 float4 of A (64 bytes, 8 lanes each: broadcast) and 8
// float4 of B (128 contiguous bytes, 4 lanes each), no two in the same bank. 4 LDS.128 feed
// 64 FFMA per k, and each needs a single 128-byte shared-memory wavefront when the hardware
// merges the broadcast lanes, which keeps shared memory well below the FFMA rate.
//
// Global loads (stage 08's register fetch below; stage 09's cp.async fetch has its own
// mapping): thread t fetches row t/2 of the A tile at k offsets (t%2)*4 + 8*l, and row
// t/32 + 8*l of the B tile at column (t%32)*4. A goes to shared memory transposed (As[k][m],
// so A operands are float4 along m) with rows padded to BM+4 floats: lanes t and t+1 store the
// same m at k and k+4, and the pad puts those 16 banks apart (no conflict). B is stored as read.
//
// VEC = true: 16-byte loads/stores; needs K % 4 == 0 and N % 4 == 0 (rows 16-byte aligned,
// a float4 is wholly inside or wholly outside the matrix). VEC = false: the same traffic as
// predicated 4-byte accesses, correct for any shape.
#ifndef GEMM_WARP_TILE_CUH
#define GEMM_WARP_TILE_CUH
#include "common.cuh"

// WN_ = 64: 8x8 per thread (default). WN_ = 128: 8x16 per thread (a 128x256 block tile with
// 256 threads: 6 LDS.128 per 128 FFMA instead of 4 per 64; 1 block per SM).
template <int BM_, int BN_, int BK_, int WN_ = 64>
struct WarpTile {
    static constexpr int BM = BM_, BN = BN_, BK = BK_;
    static constexpr int WM = 32, WN = WN_;
    static constexpr int TN = WN / 8;                    // C columns per thread (8 lanes across WN)
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int AS_LD = BM + 4;                 // padded row of the transposed A tile
    static constexpr int A_FLOATS = BK * AS_LD;          // one stage of A in shared memory
    static constexpr int B_FLOATS = BK * BN;             // one stage of B
    static constexpr int STAGE = A_FLOATS + B_FLOATS;
    static constexpr int A_LOADS = BK / 8;               // float4 of A per thread per tile
    static constexpr int B_LOADS = BK * BN / 4 / THREADS;
    static constexpr int B_ROWS_PER_LOAD = THREADS / (BN / 4);
    static_assert(BM % WM == 0 && BN % WN == 0, "block tile is a whole number of warp tiles");
    static_assert(BK % 8 == 0 && B_LOADS * B_ROWS_PER_LOAD == BK, "B fetch covers the tile");
    static_assert(AS_LD % 4 == 0, "padded rows stay 16-byte aligned");
};

// Per-thread state of the global fetch: where this thread reads, and whether its row/column
// exists. Computed once per block; a K step only adds to k.
template <class G, bool VEC>
struct Fetcher {
    const float* a;   // A + row*K + k_begin + (t%2)*4 (row clamped into the matrix)
    const float* b;   // B + (k_begin + t/32)*N + col (col clamped to the last float4 of the row)
    int a_k;          // k offset of this thread's first A float4 inside the tile
    int b_k;          // k offset of this thread's first B row inside the tile
    int b_n;          // global column of this thread's B float4
    bool a_ok;        // row < M
    int N;
    float4 ra[G::A_LOADS];
    float4 rb[G::B_LOADS];
    static_assert(G::THREADS == 2 * G::BM, "A fetch: two threads per row of the A tile");

    // k_begin: first k of this block's K range (0 unless split-K).
    __device__ __forceinline__ void init(int M, int N_, int K, const float* A, const float* B,
                                         int m0, int n0, int k_begin, int tid) {
        N = N_;
        const int r = m0 + tid / 2;
        a_ok = r < M;
        a_k = (tid % 2) * 4;
        a = A + (size_t)(a_ok ? r : M - 1) * K + k_begin + a_k;
        b_k = tid / (G::BN / 4);
        b_n = n0 + (tid % (G::BN / 4)) * 4;
        b = B + (size_t)(k_begin + b_k) * N + (b_n < N ? b_n : (N - 1) / 4 * 4);
    }

    // Fetch the tile that starts at k0 into registers (zeros where k >= k_end or outside M, N),
    // then step the pointers to the next tile. Offsets past 2^31 elements are formed in 64 bits.
    __device__ __forceinline__ void fetch(int k0, int k_end) {
#pragma unroll
        for (int l = 0; l < G::A_LOADS; ++l) {
            const int k = k0 + a_k + 8 * l;
            const float* p = a + 8 * l;
            if (VEC) {
                ra[l] = (a_ok && k < k_end) ? ld4(p) : make_float4(0.f, 0.f, 0.f, 0.f);
            } else {
                ra[l].x = (a_ok && k + 0 < k_end) ? p[0] : 0.f;
                ra[l].y = (a_ok && k + 1 < k_end) ? p[1] : 0.f;
                ra[l].z = (a_ok && k + 2 < k_end) ? p[2] : 0.f;
                ra[l].w = (a_ok && k + 3 < k_end) ? p[3] : 0.f;
            }
        }
#pragma unroll
        for (int l = 0; l < G::B_LOADS; ++l) {
            const int k = k0 + b_k + G::B_ROWS_PER_LOAD * l;
            const bool k_ok = k < k_end;
            const float* p = b + (size_t)(G::B_ROWS_PER_LOAD * l) * N;
            if (VEC) {
                rb[l] = (k_ok && b_n < N) ? ld4(p) : make_float4(0.f, 0.f, 0.f, 0.f);
            } else {
                rb[l].x = (k_ok && b_n + 0 < N) ? p[0] : 0.f;
                rb[l].y = (k_ok && b_n + 1 < N) ? p[1] : 0.f;
                rb[l].z = (k_ok && b_n + 2 < N) ? p[2] : 0.f;
                rb[l].w = (k_ok && b_n + 3 < N) ? p[3] : 0.f;
            }
        }
        a += G::BK;
        b += (size_t)G::BK * N;
    }

    // Registers -> one stage of shared memory (A transposed into As[k][m], B as is).
    __device__ __forceinline__ void store(float* stage, int tid) const {
        float* As = stage;
        float* Bs = stage + G::A_FLOATS;
        const int m = tid / 2;
#pragma unroll
        for (int l = 0; l < G::A_LOADS; ++l) {
            float* p = As + (a_k + 8 * l) * G::AS_LD + m;
            p[0 * G::AS_LD] = ra[l].x;
            p[1 * G::AS_LD] = ra[l].y;
            p[2 * G::AS_LD] = ra[l].z;
            p[3 * G::AS_LD] = ra[l].w;
        }
        const int c = (tid % (G::BN / 4)) * 4;
#pragma unroll
        for (int l = 0; l < G::B_LOADS; ++l) st4(Bs + (b_k + G::B_ROWS_PER_LOAD * l) * G::BN + c, rb[l]);
    }
};

// This thread's place in the block tile: first row of its A operands (wm + lr*4) and first
// column of its B operands (wn + lc*4), both relative to the block tile.
template <class G>
__device__ __forceinline__ void thread_origin(int tid, int& tr, int& tc) {
    const int warp = tid / 32, lane = tid % 32;
    const int wm = (warp / G::WARPS_N) * G::WM;
    const int wn = (warp % G::WARPS_N) * G::WN;
    tr = wm + (lane / 8) * 4;
    tc = wn + (lane % 8) * 4;
}

// The 8 A and TN B operands of step k: 2 + TN/4 LDS.128 (B groups of 4 are 32 columns apart).
template <class G, int TN>
__device__ __forceinline__ void load_frag(const float* stage, int k, int tr, int tc,
                                          float (&fa)[8], float (&fb)[TN]) {
    const float* As = stage + k * G::AS_LD + tr;
    const float* Bs = stage + G::A_FLOATS + k * G::BN + tc;
    const float4 a0 = ld4(As), a1 = ld4(As + 16);
    fa[0] = a0.x; fa[1] = a0.y; fa[2] = a0.z; fa[3] = a0.w;
    fa[4] = a1.x; fa[5] = a1.y; fa[6] = a1.z; fa[7] = a1.w;
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
        const float4 b = ld4(Bs + 32 * g);
        fb[4 * g + 0] = b.x; fb[4 * g + 1] = b.y; fb[4 * g + 2] = b.z; fb[4 * g + 3] = b.w;
    }
}

template <int TN>
__device__ __forceinline__ void outer_product(float (&acc)[8][TN], const float (&fa)[8], const float (&fb)[TN]) {
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += fa[i] * fb[j];
}

// Row / column of acc[i][j] inside the block tile, given the thread origin.
__device__ __forceinline__ int acc_row(int tr, int i) { return tr + (i / 4) * 16 + (i % 4); }
__device__ __forceinline__ int acc_col(int tc, int j) { return tc + (j / 4) * 32 + (j % 4); }

// C = alpha*acc + beta*C over the thread's patch; C is not read when beta == 0.
template <bool VEC, int TN>
__device__ __forceinline__ void epilogue_store(const float (&acc)[8][TN], int M, int N, float alpha,
                                               float beta, float* C, int m0, int n0, int tr, int tc) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = m0 + acc_row(tr, i);
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < TN / 4; ++h) {
            const int col = n0 + acc_col(tc, 4 * h);
            float* c = C + row * N + col;
            if (VEC) {
                if (col < N)
                    st4(c, axpby4(make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2],
                                              acc[i][4 * h + 3]), alpha, beta, c));
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < N) c[j] = axpby(acc[i][4 * h + j], alpha, beta, c + j);
            }
        }
    }
}

#endif  // GEMM_WARP_TILE_CUH
