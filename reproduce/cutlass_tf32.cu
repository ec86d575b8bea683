// A reference for stage 12: NVIDIA CUTLASS's own Ampere mma.sync TF32 GEMM (the kernel of its
// example 14_ampere_tf32_tensorop_gemm), built as a small shared library the probe plugin
// cutlass_reference.py loads with ctypes. Not part of the ladder: it answers how fast tuned
// mma.sync code with rounded operands runs on the GPU in hand, on the ladder's inputs.
//
// Configured by macros (cutlass-reference.sh builds one library per configuration):
//   TB_M TB_N TB_K   block tile        W_M W_N W_K   warp tile        STAGES   cp.async stages
//   OPERAND          float: CUTLASS converts each fragment to TF32 before its mma; compiled for
//                    compute_80 that is round_half_ulp_truncate (add 0x1000, the hardware drops the
//                    low 13 bits: the same rounding as stage 12's), for compute_90 cvt.rn.tf32.f32;
//                    cutlass::tfloat32_t: no conversion, the hardware truncates the fp32 bits.
#include <cstdio>
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm.h>
#include <cutlass/version.h>

using Operand = OPERAND;
using Gemm = cutlass::gemm::device::Gemm<
    Operand, cutlass::layout::RowMajor, Operand, cutlass::layout::RowMajor, float, cutlass::layout::RowMajor,
    float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<TB_M, TB_N, TB_K>, cutlass::gemm::GemmShape<W_M, W_N, W_K>,
    cutlass::gemm::GemmShape<16, 8, 8>,
    cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, STAGES>;

#define STR2(x) #x
#define STR(x) STR2(x)

extern "C" int cutlass_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                            float* C, void* stream) {
    typename Gemm::Arguments args({M, N, K}, {reinterpret_cast<const Operand*>(A), K},
                                  {reinterpret_cast<const Operand*>(B), N}, {C, N}, {C, N}, {alpha, beta});
    Gemm gemm;
    cutlass::Status status = Gemm::can_implement(args);
    if (status != cutlass::Status::kSuccess) return 1000 + int(status);
    status = gemm(args, nullptr, static_cast<cudaStream_t>(stream));
    return status == cutlass::Status::kSuccess ? 0 : 2000 + int(status);
}

extern "C" const char* cutlass_status(int code) {
    return cutlass::cutlassGetStatusString(cutlass::Status(code % 1000));
}

// What the row reports as its configuration (a JSON object).
extern "C" const char* cutlass_config() {
    static char text[512];
    std::snprintf(text, sizeof text,
                  "{\"tile\": \"%dx%dx%d\", \"warp_tile\": \"%dx%dx%d\", \"instruction\": \"mma.sync m16n8k8 tf32\", "
                  "\"stages\": %d, \"threads\": %d, \"smem_bytes\": %d, \"operand\": \"%s\", "
                  "\"cutlass\": \"%d.%d.%d\", \"swizzle\": \"GemmIdentityThreadblockSwizzle<8>\"}",
                  TB_M, TB_N, TB_K, W_M, W_N, W_K, STAGES, int(Gemm::GemmKernel::kThreadCount),
                  int(sizeof(typename Gemm::GemmKernel::SharedStorage)), STR(OPERAND),
                  CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH);
    return text;
}
