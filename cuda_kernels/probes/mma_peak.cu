// Probe - the instruction ceiling of mma.sync.m16n8k8 TF32 (the legacy warp-level tensor-core
// path that stage 12 runs) and of FFMA, on the GPU at hand: operands in registers, no memory
// access inside the timed loop. A measurement, not a ladder stage: nothing here is registered.
// cuda_kernels/probes/mma_peak.py compiles, launches, times and checks these kernels.
//
// CHAINS independent accumulators per warp (mma) or thread (FFMA): one chain waits out the
// instruction's latency, more chains and more warps per SM fill the pipe. The runtime loop is
// kept rolled (#pragma unroll 1) and its body repeats every chain REPS times, so each iteration
// is BODY instructions of the kind measured plus the loop's counter, compare and branch
// (tests/test_probe_mma_peak.py reads the SASS to check that).
// Operand values come from threadIdx.x (nothing is known at compile time), and every step adds
// one power of two to each accumulator; with the steps per chain capped (MAX_STEPS in
// mma_peak.py) every partial sum is exact in fp32, so the host can check each thread's written
// sum against a closed form and report a kernel that skipped work or computed garbage as FAILED.

namespace probe {

constexpr int MMA_BODY = 32;    // mma per loop iteration, whatever CHAINS
constexpr int FFMA_BODY = 256;  // FFMA per loop iteration: issue slots are FFMA's limit, so the loop's 3 must be few

// 2^e as a float, for -126 <= e <= 127: exact, and no library call.
__device__ __forceinline__ float pow2(int e) { return __int_as_float((127 + e) << 23); }

}  // namespace probe

// A (16x8, row-major) is 2^(row / 8) where k == row % 8, else 0; B (8x8, k x n) holds
// 2^((k + n) % 3 - 2). So D = A B has D[row][n] = 2^(row / 8) B[row % 8][n]: one power of two
// per element, 0.25 to 2. Rows g and g+8 get different values so that the four A registers
// differ: equal ones become one register, copied into the four consecutive registers an mma
// operand needs by MOVs inside the loop.
// Fragment slots (lane = 4g + t): a0 A[g][t], a1 A[g+8][t], a2 A[g][t+4], a3 A[g+8][t+4];
// b0 B[t][g], b1 B[t+4][g]; accumulators (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
template <int CHAINS>
__global__ void mma_tf32_peak(int iters, float* __restrict__ out) {
    static_assert(probe::MMA_BODY % CHAINS == 0, "the body repeats every chain equally often");
    constexpr int REPS = probe::MMA_BODY / CHAINS;
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const unsigned a0 = __float_as_uint(g == t ? 1.f : 0.f), a1 = __float_as_uint(g == t ? 2.f : 0.f);
    const unsigned a2 = __float_as_uint(g == t + 4 ? 1.f : 0.f), a3 = __float_as_uint(g == t + 4 ? 2.f : 0.f);
    const unsigned b0 = __float_as_uint(probe::pow2((t + g) % 3 - 2));
    const unsigned b1 = __float_as_uint(probe::pow2((t + 4 + g) % 3 - 2));
    float acc[CHAINS][4];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[c][i] = static_cast<float>(c);  // distinct chains: none can stand for another
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int r = 0; r < REPS; ++r) {
#pragma unroll
            for (int c = 0; c < CHAINS; ++c) {
                asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                             "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                             : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                             : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += (acc[c][0] + acc[c][1]) + (acc[c][2] + acc[c][3]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Each chain: acc = a * b + acc with a * b = 2^(tid % 3 - 1) * 2^-((tid / 3) % 2).
template <int CHAINS>
__global__ void ffma_peak(int iters, float* __restrict__ out) {
    static_assert(probe::FFMA_BODY % CHAINS == 0, "the body repeats every chain equally often");
    constexpr int REPS = probe::FFMA_BODY / CHAINS;
    const int tid = threadIdx.x;
    const float a = probe::pow2(tid % 3 - 1), b = probe::pow2(-((tid / 3) % 2));
    float acc[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = static_cast<float>(c);
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int r = 0; r < REPS; ++r) {
#pragma unroll
            for (int c = 0; c < CHAINS; ++c) {
                // Inline PTX: the compiler may neither merge chains nor fold the repeated adds.
                asm volatile("fma.rn.f32 %0, %1, %2, %0;\n" : "+f"(acc[c]) : "f"(a), "f"(b));
            }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
