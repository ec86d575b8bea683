"""What stage 13's operand copies cost: each 4096^3 / 8192^3 launch timed whole, its GEMM kernel
alone (the copies' outputs left from the first launch) and its copies alone, with CUDA events
(median of 5 batches of 30); tf32 both ways (b_operand=copy and =registers, the default). Run on the GPU machine from the repository root:

    PYTHONPATH=. python results/h100/tensor-core/stage13_copy_cost.py stage13_copy_cost.json
"""
import torch, json, sys
import cuda_kernels.registry as R
from compare.harness.registry import get
from compare.harness.problem import Problem
from compare.harness.inputs import make_inputs
cap = {}
orig = R._launcher
def spy(*steps):
    cap["steps"] = steps
    return orig(*steps)
R._launcher = spy
k = get("cuda.13_wgmma_tma")
out = []
def t(fn, reps=30):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = []
    for _ in range(5):
        e0.record()
        for _ in range(reps): fn()
        e1.record(); torch.cuda.synchronize()
        best.append(e0.elapsed_time(e1) / reps * 1e3)
    return sorted(best)[len(best)//2]
for n in (4096, 8192):
    for pr, b_path in (("tf32", "copy"), ("tf32", "registers"), ("tf32x3", "copy")):
        p = Problem(n, n, n, precision=pr)
        inp = make_inputs(p)
        k.prepare(p, inp, {"b_operand": b_path})
        steps = cap["steps"]
        full = t(orig(*steps)); gemm = t(orig(steps[-1])); copies = t(orig(*steps[:-1])) if len(steps) > 1 else 0.0
        row = dict(shape=n, precision=pr, b_operand=b_path, full_us=full, gemm_us=gemm, copies_us=copies,
                   copy_share=copies / full, tflops_full=2*n**3/full/1e6, tflops_gemm_only=2*n**3/gemm/1e6)
        print(row, flush=True); out.append(row)
        del inp
        torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
