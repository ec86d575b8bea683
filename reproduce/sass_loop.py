"""The main loop of a compiled GEMM, read from its SASS: instructions per iteration by opcode,
HMMA count, and the sum of the stall counts ptxas wrote into the control bits (the fewest cycles
one warp needs per iteration when nothing waits). No GPU needed: nvcc and nvdisasm compile and
read stage 12; Triton compiles for sm_90 on the CPU. The stage 12 probes
(results/h100/tensor-core/stage12-probes/triton-mma-sync/) used it.

    python reproduce/sass_loop.py stage12:128x128x32.vec [stage12:LABEL ...] [triton] [cubin:PATH]

(from the root of the working tree to read).
``stage12:LABEL`` is a stage 12 configuration label of the working tree (a probe patch applied
adds its tiles); ``triton`` is triton.tiled's 128x128x32/4/4 tile on row-major operands,
lowered to mma.sync (DISABLE_MMA_V3=1 set here, before Triton is imported); ``triton-rounded``
is that kernel's PTX with stage 12's TF32 rounding (add.s32 0x1000) after every fragment load,
through ptxas on PATH (or Triton's own); ``cubin:PATH`` is a compiled kernel as it is (e.g. the
CUTLASS references cutlass-reference.sh builds). Prints CSV rows, one
per loop of at least 100 instructions (a kernel split into checked and unchecked loops has two).
"""
from __future__ import annotations

import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.getcwd())   # the working tree it runs in: a probe's worktree reads its own registry


def nvdisasm() -> str:
    import shutil
    cands = [shutil.which("nvdisasm")] + sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "site-packages",
                                                                          "nvidia", "cu*", "bin", "nvdisasm")))
    for entry in sys.path:
        cands += sorted(glob.glob(os.path.join(entry, "nvidia", "cu*", "bin", "nvdisasm")))
    found = [c for c in cands if c and os.path.exists(c)]
    if not found:
        sys.exit("nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
    return found[0]


def stage12_cubin(label: str, work: str) -> str:
    from cuda_kernels import registry, resources
    spec = next(s for s in registry.SPECS if s.file.startswith("12_"))
    cfg = next((c for c in spec.configs if c.label == label), None)
    if cfg is None:
        sys.exit(f"no stage 12 configuration {label!r}; known: {', '.join(c.label for c in spec.configs)}")
    src = os.path.join(work, "s12.cu")
    with open(src, "w") as f:
        f.write(resources.instantiation_source(spec, cfg))
    subprocess.run(resources._nvcc_command(resources.nvcc_path(), ["sm_90"], src, os.path.join(work, "s12")),
                   check=True, capture_output=True)
    return os.path.join(work, "s12.cubin")


def rounded_ptx_cubin(ptx: str, work: str) -> str:
    """Triton's PTX with an add.s32 of half a TF32 ulp after every ldmatrix / ld.shared.b32
    result, as stage 12 rounds its fragments, compiled by ptxas for sm_90a."""
    import shutil
    out = []
    for line in ptx.splitlines():
        out.append(line)
        s = line.strip()
        m = re.match(r"ldmatrix\S*\s*\{\s*([^}]*)\}", s)
        regs = [r.strip() for r in m.group(1).split(",")] if m else []
        m = re.match(r"(@%p\d+\s+)?ld\.shared\.b32\s+(%r\d+),", s)
        regs += [m.group(2)] if m else []
        out += [f"\tadd.s32 \t{r}, {r}, 4096;" for r in regs]
    src = os.path.join(work, "rounded.ptx")
    with open(src, "w") as f:
        f.write("\n".join(out) + "\n")
    import triton
    ptxas = shutil.which("ptxas") or os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    cubin = os.path.join(work, "rounded.cubin")
    subprocess.run([ptxas, "-arch=sm_90a", "-o", cubin, src], check=True, capture_output=True)
    return cubin


def triton_cubin(work: str, rounded: bool = False) -> str:
    import torch
    from triton_kernels import tiled
    from triton_kernels._common import compile_sm90
    from compare.harness.problem import DOT_PRECISION
    n = 4096
    t = torch.empty(16, dtype=torch.float32)
    args = dict(a_ptr=t, b_ptr=t, c_ptr=t, M=n, N=n, K=n, stride_am=n, stride_ak=1, stride_bk=n, stride_bn=1,
                stride_cm=n, stride_cn=1, alpha=1.0, beta=0.0)
    ce = dict(PRECISION=DOT_PRECISION["tf32"], HAS_BETA=False, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
              EVEN_K=True)
    k = compile_sm90(tiled._tiled_kernel.fn.fn, args, ce, 4, 4)
    if rounded:
        return rounded_ptx_cubin(k.asm["ptx"], work)
    out = os.path.join(work, "triton.cubin")
    with open(out, "wb") as f:
        f.write(k.asm["cubin"])
    return out


def registers(cubin: str) -> int:
    """Registers per thread of the cubin's kernel (cuobjdump -res-usage: on PATH, beside
    nvdisasm, or Triton's own); -1 without cuobjdump."""
    import shutil
    tools = [shutil.which("cuobjdump"), os.path.join(os.path.dirname(nvdisasm()), "cuobjdump")]
    try:
        import triton
        tools.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"))
    except ImportError:
        pass
    for tool in [t for t in tools if t and os.path.exists(t)][:1]:
        text = subprocess.run([tool, "-res-usage", cubin], capture_output=True, text=True).stdout
        m = re.search(r"REG:(\d+)", text)
        if m:
            return int(m.group(1))
    return -1


def loops(cubin: str):
    text = subprocess.run([nvdisasm(), "-c", "-hex", cubin], capture_output=True, text=True).stdout.splitlines()
    ins, labels = [], {}
    i = 0
    while i < len(text):
        line = text[i]
        m = re.match(r"\s*\.?(L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?);\s*/\* 0x[0-9a-f]+ \*/", line)
        if m:
            hi = int(re.search(r"/\* (0x[0-9a-f]+) \*/", text[i + 1]).group(1), 16)
            op = re.match(r"(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", m.group(1)).group(2)
            ins.append((op, (hi >> 41) & 0xF, m.group(1)))   # stall count: bits 105-108 of the 128-bit word
            i += 2
            continue
        i += 1
    for j, (_, _, body) in enumerate(ins):
        m = re.search(r"BRA\s+`?\(?\.?(L_x_\d+)", body)
        if m and m.group(1) in labels and labels[m.group(1)] < j and j - labels[m.group(1)] >= 100:
            yield ins[labels[m.group(1)]:j + 1]


def main(argv):
    if not argv:
        sys.exit(__doc__)
    if any(a.startswith("triton") for a in argv):
        os.environ["DISABLE_MMA_V3"] = "1"
        os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp())
    print("kernel,loop,instructions,hmma,stall_cycles,lds,ldsm,ldgsts,integer_alu,bar,registers,hmma_a_reuse")
    with tempfile.TemporaryDirectory() as work:
        for name in argv:
            if name.startswith("cubin:"):
                cubin = name.removeprefix("cubin:")
            elif name.startswith("triton"):
                cubin = triton_cubin(work, rounded=name == "triton-rounded")
            else:
                cubin = stage12_cubin(name.removeprefix("stage12:"), work)
            for n, body in enumerate(loops(cubin)):
                h = collections.Counter(op for op, _, _ in body)
                alu = sum(h[o] for o in ("IADD3", "VIADD", "IMAD", "SEL", "ISETP", "LEA", "MOV"))
                # HMMA whose A fragment comes from the operand reuse cache (consecutive mma share A).
                a_reuse = sum(1 for op, _, t in body if op == "HMMA" and re.search(r"HMMA\S* R\d+, R\d+\.reuse", t))
                print(f"{name},{n},{len(body)},{h['HMMA']},{sum(s for _, s, _ in body)},{h['LDS']},{h['LDSM']},"
                      f"{h['LDGSTS']},{alu},{h['BAR']},{registers(cubin)},{a_reuse}")


if __name__ == "__main__":
    main(sys.argv[1:])
