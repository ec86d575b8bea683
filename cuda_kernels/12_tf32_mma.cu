// Stage 12 - TF32 tensor cores: warp-level mma.sync.m16n8k8 on TF32 operands, fed from a
// multi-stage cp.async pipeline through bank-conflict-free shared memory.
//
// Bottleneck removed: the FFMA pipe. Stages 01-11 top out at the fp32 FMA rate (about 50
// TFLOP/s on an H100); one mma.sync.m16n8k8 TF32 is 1024 multiply-adds in one warp
// instruction, executed on the tensor cores.
//  * Operands: fp32 in global and shared memory, rounded to TF32 (10-bit mantissa, nearest,
//    ties away: cvt.rna.tf32.f32's rule, see tf32_operand) as they enter the fragment
//    registers; accumulation is fp32.
//  * A fragments (16x8, row-major) come in with one ldmatrix.x4 per 16 rows: ldmatrix moves
//    8x8 matrices of 16-bit elements, i.e. 8 rows x 4 floats, and hands lane i the float at
//    (row i/4, column i%4), which is exactly the TF32 A fragment's (groupID, threadID) slot.
//    B fragments (8x8, k x n) are 2 LDS.32 per 8 columns (ldmatrix can't transpose 32-bit data).
//  * Shared memory: A as As[m][k] rows of BK+4 floats, B as Bs[k][n] rows of BN+8 floats. The
//    pads make every fragment read conflict-free: the 8 row addresses of an ldmatrix phase
//    start 4*r words apart mod 32 (BK=32) (8 disjoint 4-bank groups), and
//    lane (g, t) of a B read hits bank (8t + g) mod 32 (all 32 distinct). Pads are multiples
//    of 4 floats, so every row stays 16-byte aligned for cp.async and ldmatrix.
//  * STAGES-deep cp.async pipeline (one group per K tile, one barrier per K tile): tile
//    kt+STAGES-1 is copied while tile kt is multiplied, for tf32 a quarter per k8 step
//    (COPY_PARTS: in one burst they held the first ldmatrix; 1.04-1.08x, H200).
//  * SPLIT3 (precision tf32x3): each operand x is split into big = tf32(x) and small =
//    tf32(x - big); acc += a_s*b_b + a_b*b_s + a_b*b_b (small*small dropped, about 2^-22
//    relative): FP32-class error at three tensor-core products per product. The three go into
//    a zeroed temporary added to acc by an FADD (compute_stage says why).
// Still there: mma.sync is Hopper's legacy tensor-core path, 334.9 TFLOP/s at most on an H100
// (probes/mma_peak.py), below what wgmma + TMA (cuBLAS, stage 13) reach. H100
// (results/h100/tensor-core/): 157-177 TFLOP/s, 43-50% of cuBLAS tf32 at 4096^3 / 8192^3, the
// tensor pipe 57% busy: two warps per scheduler leave fixed-latency waits exposed.
// B fragments are scalar shared loads (ldmatrix can't transpose 32-bit data); the epilogue
// writes float2 pieces straight from registers.
// Cost: 128x128x32 tile, 3 stages: 105 KiB of dynamic shared memory per block (2 blocks per
// SM on sm_90, 1 on sm_80), 4 warps of 64x64, 196 registers. tf32x3: 8 warps of 64x32 at 255
// registers (1 block per SM), three mma and 4 FADD per product of a k8 step, plus the splits:
// 48-50 TFLOP/s, 0.92-0.95x cuBLAS fp32 at rel. error 4.2e-7 / 5.8e-7. Needs sm_80 or newer
// (TF32 mma.sync, cp.async, ldmatrix).
// Requirement: none (VEC=false: predicated 4-byte copies and scalar stores for K % 4 != 0 or
// N % 4 != 0; rows and columns past the matrix are zero-filled).
#include "common.cuh"

namespace tf32mma {

__device__ __forceinline__ unsigned smem_addr(const float* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// An mma operand rounded to TF32, nearest with ties away from zero (cvt.rna.tf32.f32's rule).
// nvcc lowers cvt.rna.tf32.f32 feeding an mma to FSETP |x| < inf + IADD 0x1000 (sm_80 and sm_90
// alike): the mma reads only the upper 19 bits, so adding half a TF32 ulp to the bit pattern is
// the rounding. Here without the FSETP: inf + 0x1000 still reads as inf, and one integer add per
// element instead of two instructions cut the main loop from 595 to 467 instructions per 128
// mma (the loop is issue-bound). The one difference: a NaN whose payload lies only in the low
// 13 bits reads as inf.
__device__ __forceinline__ unsigned tf32_operand(float x) { return __float_as_uint(x) + 0x1000u; }

// 3xTF32 split of x: big = tf32(x) as an exact fp32 value (low 13 bits cleared), small =
// x - big (exact in fp32), passed as an operand (rounded like tf32_operand). small is 0 where
// x is inf (inf - inf would poison the sum); a NaN x still gives NaN through big.
__device__ __forceinline__ void tf32_split(float x, unsigned& big, unsigned& small) {
    unsigned b;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(b) : "f"(x));
    big = b & 0xffffe000u;
    const float s = x - __uint_as_float(big);
    small = tf32_operand(s == s ? s : 0.f);
}

// Four 8x4-float matrices, rows addressed by lanes 8j..8j+7 for matrix j.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int BM, int BN, int BK, int WM, int WN>
struct Geometry {
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int MI = WM / 16, NI = WN / 8;      // mma tiles per warp
    static constexpr int A_LD = BK + 4, B_LD = BN + 8;   // padded rows (floats)
    static constexpr int A_FLOATS = BM * A_LD, B_FLOATS = BK * B_LD;
    static constexpr int STAGE = A_FLOATS + B_FLOATS;
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0, "tile shapes");
    static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "float4 copies split evenly");
    static_assert((BM * BK) % THREADS == 0 && (BK * BN) % THREADS == 0, "scalar copies split evenly");
};

// Copies K tiles of A and B into shared memory; zeros outside the matrix.
// VEC: 16-byte copies (K % 4 == 0, N % 4 == 0: a float4 is wholly inside or outside). Else
// 4-byte copies. Either way 8 (VEC) or 32 consecutive lanes copy one contiguous row piece
// (whole 32-byte sectors). Per thread: one pointer per operand, walked pass by pass (a pointer
// per pass, hoisted out of the K loop, cost 32 registers and spilled the 64x64 warp tile).
// A zero-filling copy reads nothing; its source is kept legal (the matrix's base).
template <class G, int BM, int BN, int BK, bool VEC>
struct TileLoader {
    static constexpr int W = VEC ? 4 : 1;                        // floats per copy
    static constexpr int A_PER_ROW = BK / W, B_PER_ROW = BN / W;
    static constexpr int A_RPP = G::THREADS / A_PER_ROW, B_RPP = G::THREADS / B_PER_ROW;  // rows per pass
    static constexpr int A_PASSES = BM / A_RPP, B_PASSES = BK / B_RPP;
    static_assert(A_RPP * A_PER_ROW == G::THREADS && A_PASSES * A_RPP == BM, "A copies split evenly");
    static_assert(B_RPP * B_PER_ROW == G::THREADS && B_PASSES * B_RPP == BK, "B copies split evenly");
    const float* a;    // A + row*K + k + a_k (row clamped into the matrix), k = next tile's first k
    const float* b;    // B + (k + b_k)*N + col (col clamped into the row)
    size_t a_pass, b_pass;   // elements between two passes
    int a_rows;        // passes whose A row exists
    int a_k, b_k;      // this thread's k offset inside the tile (A column, B row)
    bool b_col;        // this thread's B column exists
    int a_dst, b_dst;  // offsets inside a stage

    __device__ __forceinline__ void init(const float* A, const float* B, int M, int N, int K, int m0, int n0,
                                         int tid) {
        const int ar = tid / A_PER_ROW, bc = (tid % B_PER_ROW) * W;
        a_k = (tid % A_PER_ROW) * W;
        b_k = tid / B_PER_ROW;
        const int row = m0 + ar;
        a_rows = row < M ? (M - row - 1) / A_RPP + 1 : 0;
        a = A + (size_t)(row < M ? row : M - 1) * K + a_k;
        b_col = n0 + bc < N;
        b = B + (size_t)b_k * N + (b_col ? n0 + bc : 0);
        a_pass = (size_t)A_RPP * K;
        b_pass = (size_t)B_RPP * N;
        a_dst = ar * G::A_LD + a_k;
        b_dst = G::A_FLOATS + b_k * G::B_LD + bc;
    }

    // Part `part` of PARTS of the tile starting at k0 into `stage` (its share of A's and B's
    // passes); after the last part the pointers step to the next tile.
    template <int PARTS>
    __device__ __forceinline__ void issue_part(float* stage, const float* A, const float* B, int K, int N, int k0,
                                               int part) {
        static_assert(A_PASSES % PARTS == 0 && B_PASSES % PARTS == 0, "passes split evenly into parts");
        constexpr int AP = A_PASSES / PARTS, BP = B_PASSES / PARTS;
        const bool a_kok = k0 + a_k < K;
#pragma unroll
        for (int j = 0; j < AP; ++j) {
            const int i = part * AP + j;
            const bool ok = a_kok && i < a_rows;
            const float* p = a + i * a_pass;
            float* d = stage + a_dst + i * A_RPP * G::A_LD;
            if (VEC) cp_async16(d, ok ? p : A, ok);
            else cp_async4(d, ok ? p : A, ok);
        }
#pragma unroll
        for (int j = 0; j < BP; ++j) {
            const int i = part * BP + j;
            const bool ok = b_col && k0 + b_k + i * B_RPP < K;
            const float* q = b + i * b_pass;
            float* d = stage + b_dst + i * B_RPP * G::B_LD;
            if (VEC) cp_async16(d, ok ? q : B, ok);
            else cp_async4(d, ok ? q : B, ok);
        }
        if (part == PARTS - 1) {
            a += BK;
            b += (size_t)BK * N;
        }
    }

    // The whole tile starting at k0 into `stage`, then the pointers step to the next tile.
    __device__ __forceinline__ void issue(float* stage, const float* A, const float* B, int K, int N, int k0) {
        issue_part<1>(stage, A, B, K, N, k0, 0);
    }
};

// compute_stage's hook between a k8 step's A fragments and its mma: nothing.
struct NoCopies {
    __device__ __forceinline__ void operator()(int) const {}
};

// One stage's BK/8 mma steps for this warp's WM x WN tile.
// tf32: acc += a*b on the tensor cores. SPLIT3: the three products of one k8 step go into a
// zeroed temporary that is then added to acc with an fp32 FADD. The tensor cores' accumulation
// truncates (round toward zero, Ootomo & Yokota 2022); accumulated in acc over K = 4096 that bias
// gave a relative error of 2.9e-5 (cuBLAS fp32: 1.1e-6). Chained over 3 products only, then
// rounded to nearest, it stays at fp32's level, for 4 FADDs per 3 mma.
// between_steps(s) runs after k8 step s's A fragments are loaded, before its mma: the main loop
// issues part s of the next tile's copies there.
template <class G, int BK, bool SPLIT3, class Hook = NoCopies>
__device__ __forceinline__ void compute_stage(float (&acc)[G::MI][G::NI][4], const float* stage, int a_row,
                                              int a_col, int b_off, Hook between_steps = Hook()) {
    const unsigned a_base = smem_addr(stage) + 4u * (a_row * G::A_LD + a_col);
    const float* Bs = stage + G::A_FLOATS + b_off;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
        // SPLIT3 holds big and small parts of A (2x the fragment registers): loads of the next
        // k8 step hoisted above this one's mma pushed the 64x64 warp tile past 255 registers.
        if (SPLIT3) asm volatile("" ::: "memory");
        unsigned a_big[G::MI][4], a_small[G::MI][4];
#pragma unroll
        for (int mi = 0; mi < G::MI; ++mi) {
            unsigned raw[4];
            ldmatrix_x4(raw, a_base + 4u * (mi * 16 * G::A_LD + kk));
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float x = __uint_as_float(raw[j]);
                if (SPLIT3) tf32_split(x, a_big[mi][j], a_small[mi][j]);
                else a_big[mi][j] = tf32_operand(x);
            }
        }
        between_steps(kk / 8);
#pragma unroll
        for (int ni = 0; ni < G::NI; ++ni) {
            const float x0 = Bs[kk * G::B_LD + ni * 8], x1 = Bs[(kk + 4) * G::B_LD + ni * 8];
            if (SPLIT3) {
                unsigned b0, b1, s0, s1;
                tf32_split(x0, b0, s0);
                tf32_split(x1, b1, s1);
#pragma unroll
                for (int mi = 0; mi < G::MI; ++mi) {
                    float t[4] = {0.f, 0.f, 0.f, 0.f};
                    mma(t, a_small[mi], b0, b1);   // small terms first, then the big one
                    mma(t, a_big[mi], s0, s1);
                    mma(t, a_big[mi], b0, b1);
#pragma unroll
                    for (int j = 0; j < 4; ++j) acc[mi][ni][j] += t[j];
                }
            } else {
                const unsigned b0 = tf32_operand(x0), b1 = tf32_operand(x1);
#pragma unroll
                for (int mi = 0; mi < G::MI; ++mi) mma(acc[mi][ni], a_big[mi], b0, b1);
            }
        }
    }
}

}  // namespace tf32mma

// C = alpha * A @ B + beta * C, A: M x K, B: K x N, C: M x N, all row-major fp32.
// Warp w computes rows wm..wm+WM, columns wn..wn+WN of the block tile as MI x NI mma tiles.
// MINB: resident blocks per SM the register budget is sized for (__launch_bounds__).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MINB, bool VEC, bool SPLIT3>
__global__ void __launch_bounds__(tf32mma::Geometry<BM, BN, BK, WM, WN>::THREADS, MINB)
sgemm_tf32_mma(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
               float beta, float* __restrict__ C) {
    using G = tf32mma::Geometry<BM, BN, BK, WM, WN>;
    static_assert(STAGES >= 2, "a pipeline needs two stages");
    // tf32: the next tile's copies a quarter per k8 step (header); tf32x3 keeps them in one burst
    // (its 255 registers leave no room to move them, and it was not measured).
    constexpr int COPY_PARTS = SPLIT3 ? 1 : BK / 8;
    extern __shared__ __align__(16) float smem[];
    int tm, tn;
    tile_grouped<8>(cdiv(M, BM), cdiv(N, BN), tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / G::WARPS_N) * WM, wn = (warp % G::WARPS_N) * WN;
    const int g = lane / 4, t = lane % 4;
    // ldmatrix: lane l gives the address of row l%8 of matrix l/8; matrices 0..3 are
    // (rows 0-7, k 0-3), (rows 8-15, k 0-3), (rows 0-7, k 4-7), (rows 8-15, k 4-7) -> a0..a3.
    const int a_row = wm + (lane % 8) + ((lane / 8) % 2) * 8, a_col = (lane / 16) * 4;
    const int b_off = t * G::B_LD + wn + g;   // b0 = B[k=t][n=g], b1 = B[k=t+4][n=g]

    float acc[G::MI][G::NI][4];
#pragma unroll
    for (int mi = 0; mi < G::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < G::NI; ++ni)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[mi][ni][j] = 0.f;

    tf32mma::TileLoader<G, BM, BN, BK, VEC> loader;
    loader.init(A, B, M, N, K, m0, n0, tid);
    const int ktiles = cdiv(K, BK);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) loader.issue(smem + s * G::STAGE, A, B, K, N, s * BK);
        cp_async_commit();
    }
    int read = 0, write = STAGES - 1;
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed ...
        __syncthreads();              // ... and everyone's; every warp is done with tile kt-1
        // Tile kt+STAGES-1 goes where tile kt-1 was.
        const int next = kt + STAGES - 1;
        if (COPY_PARTS == 1) {
            if (next < ktiles) loader.issue(smem + write * G::STAGE, A, B, K, N, next * BK);
            cp_async_commit();
            tf32mma::compute_stage<G, BK, SPLIT3>(acc, smem + read * G::STAGE, a_row, a_col, b_off);
        } else {
            float* dst = smem + write * G::STAGE;
            const bool more = next < ktiles;
            tf32mma::compute_stage<G, BK, SPLIT3>(acc, smem + read * G::STAGE, a_row, a_col, b_off, [&](int s) {
                if (more && s < COPY_PARTS) loader.template issue_part<COPY_PARTS>(dst, A, B, K, N, next * BK, s);
            });
            cp_async_commit();
        }
        read = read == STAGES - 1 ? 0 : read + 1;
        write = write == STAGES - 1 ? 0 : write + 1;
    }
    cp_async_wait<0>();  // no copy may still target shared memory when the block exits

    // acc[mi][ni] = C rows (g, g+8) x columns (2t, 2t+1) of mma tile (mi, ni).
#pragma unroll
    for (int mi = 0; mi < G::MI; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wm + mi * 16 + g + 8 * h;
            if (row >= M) continue;
            float* c_row = C + (size_t)row * N;
#pragma unroll
            for (int ni = 0; ni < G::NI; ++ni) {
                const int col = n0 + wn + ni * 8 + 2 * t;
                const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
                if (VEC) {
                    // N % 4 == 0 and col even: the pair is 8-byte aligned and wholly in or out.
                    if (col < N) {
                        float2* p = reinterpret_cast<float2*>(c_row + col);
                        float2 r;
                        if (beta == 0.0f) {
                            r.x = alpha * v0; r.y = alpha * v1;
                        } else {
                            const float2 o = *p;
                            r.x = alpha * v0 + beta * o.x; r.y = alpha * v1 + beta * o.y;
                        }
                        *p = r;
                    }
                } else {
                    if (col < N) c_row[col] = axpby(v0, alpha, beta, c_row + col);
                    if (col + 1 < N) c_row[col + 1] = axpby(v1, alpha, beta, c_row + col + 1);
                }
            }
        }
    }
}
