"""How the compiler feeds wgmma, read off kernels compiled for sm_90 on a CPU (no GPU): the
TTGIR of docs/examples/tf32_b_by_tma.py (``tma_b_ir``), the PTX and ptxas's notes of
docs/examples/tf32_gluon_swap.py (``gluon_swap_ir``) and of stream_k_gluon.py's warp-specialised
kernel (``ws_ir``); ``ptxas_notes`` and ``loop_body`` also serve reproduce/stream_k_study.py's
--skinny-ir. Run through ``python -m reproduce.stream_k_study --tma-b-ir | --gluon-ir | --ws-ir``.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler import compile as triton_compile
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource

from triton_kernels import stream_k_gluon as ws


def _example(name: str):
    """docs/examples/NAME.py imported as a module (the plugins live outside the package)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tma_b_ir() -> dict:
    """How the compiler feeds wgmma a tf32 B that TMA read as stored (row-major, N-major in
    shared memory): docs/examples/tf32_b_by_tma.py's kernels compiled for sm_90 (no GPU), counted
    in their TTGIR per variant: shared-memory loads into registers (local_load), register tiles
    written back to shared memory (local_alloc of a value), transposed views, wgmma and waits for
    none outstanding (pendings = 0)."""
    mod = _example("tf32_b_by_tma")
    out = {}
    for name, (bm, bn, bk, warps, stages, swap) in mod.CONFIGS.items():
        sig = {"a_desc": f"tensordesc<fp32[{bm}, {bk}]>", "b_desc": f"tensordesc<fp32[{bk}, {bn}]>",
               "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "scm": "i32", "alpha": "fp32"}
        consts = {"BM": bm, "BN": bn, "BK": bk, "GROUP": 8, "SWAP": swap}
        sig.update({k: "constexpr" for k in consts})
        ttgir = triton_compile(ASTSource(mod._k, sig, consts), target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": warps, "num_stages": stages}).asm["ttgir"]
        out[name] = {"triton": triton.__version__,
                     "local_load": len(re.findall(r"= ttg\.local_load ", ttgir)),
                     "local_alloc of registers": len(re.findall(r"= ttg\.local_alloc %", ttgir)),
                     "memdesc_trans": len(re.findall(r"ttg\.memdesc_trans", ttgir)),
                     "wgmma": len(re.findall(r"ttng\.warp_group_dot ", ttgir)),
                     "wgmma waits for 0 pending": len(re.findall(r"warp_group_dot_wait .*pendings = 0", ttgir))}
    return out


def ptxas_notes(ptx: str) -> dict:
    """Assemble ``ptx`` for sm_90a with the ptxas Triton ships: its version, the registers it
    used, spill bytes and its C75xx notes on serialising the wgmma pipeline."""
    bindir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    # Triton 3.9 emits PTX 9.x, which only its ptxas-blackwell (CUDA 13.x) assembles.
    assemblers = [p for p in (os.path.join(bindir, "ptxas-blackwell"), os.path.join(bindir, "ptxas")) if os.path.exists(p)]
    out = {"ptxas": "", "ptxas serialisation": "ptxas not found", "registers": None, "spill bytes": None}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        for ptxas in assemblers:
            r = subprocess.run([ptxas, "-arch=sm_90a", "-v", src, "-o", os.path.join(tmp, "k.cubin")],
                               capture_output=True, text=True)
            if r.returncode == 0:
                out["ptxas"] = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
                notes = " ".join(sorted(set(re.findall(r"\(C75\d\d\)[^\n]*?serialized due to [^']*", r.stderr))))
                out["ptxas serialisation"] = notes or "none"
                regs = re.search(r"Used (\d+) registers", r.stderr)
                out["registers"] = int(regs.group(1)) if regs else None
                out["spill bytes"] = sum(int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", r.stderr))
                break
            out["ptxas serialisation"] = f"ptxas failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
    return out


def _wgmma_counts(ptx: str) -> dict:
    return {"triton": triton.__version__,
            "wgmma": len(re.findall(r"wgmma\.mma_async", ptx)),
            "wgmma with A from registers": len(re.findall(r"wgmma\.mma_async[^;]*\}, \{%r\d+,%r\d+,%r\d+,%r\d+\}, %rd",
                                                           ptx)),
            "tma copies": len(re.findall(r"cp\.async\.bulk\.tensor", ptx))}


def gluon_swap_ir() -> dict:
    """docs/examples/tf32_gluon_swap.py's kernels (Gluon: the swapped product with B^T's
    fragments in wgmma's register operand) compiled for sm_90 without a GPU: per config, the
    wgmma that take their A operand from registers, the TMA copies, and what ptxas (the one
    Triton ships) says about serialising the wgmma pipeline (its C75xx performance notes)."""
    mod = _example("tf32_gluon_swap")
    out = {}
    for name, (bm, bn, bk, stages, warps) in mod.CONFIGS.items():
        a_l = gl.NVMMASharedLayout.get_default_for([bm, bk], gl.float32)
        b_l = gl.NVMMASharedLayout.get_default_for([bk, bn], gl.float32)
        sig = {"a_desc": f"tensordesc<fp32[{bm}, {bk}],{a_l!r}>", "b_desc": f"tensordesc<fp32[{bk}, {bn}],{b_l!r}>",
               "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "scm": "i32", "alpha": "fp32", "beta": "fp32"}
        consts = {"HAS_BETA": False, "BM": bm, "BN": bn, "BK": bk, "STAGES": stages, "GROUP": 8, "WARPS": warps}
        sig.update({k: "constexpr" for k in consts})
        ptx = triton_compile(GluonASTSource(mod._swap_kernel, sig, consts), target=GPUTarget("cuda", 90, 32),
                             options={"num_warps": warps}).asm["ptx"]
        out[name] = dict(_wgmma_counts(ptx), **{k: v for k, v in ptxas_notes(ptx).items()
                                                if k in ("ptxas", "ptxas serialisation")})
    return out


def ws_ir() -> dict:
    """stream_k_gluon.py's warp-specialised tf32 kernel (mode=ws), both tiles, whole K and split,
    compiled for sm_90 without a GPU as WsPlan launches it: wgmma (all with B^T from registers),
    TMA copies, the register budgets set per partition (setmaxnreg), the empty-slot arrivals, and
    what ptxas says (registers, spills, C75xx serialisation notes)."""
    out = {}
    for (name, t), split in ((nt, sp) for nt in ws.WS_TILES.items() for sp in (False, True)):
        a_l = gl.NVMMASharedLayout.get_default_for([t.bm, t.bk], gl.float32)
        b_l = gl.NVMMASharedLayout.get_default_for([t.bk, t.bn], gl.float32)
        sig = {"a_desc": f"tensordesc<fp32[{t.bm}, {t.bk}],{a_l!r}>",
               "b_desc": f"tensordesc<fp32[{t.bk}, {t.bn}],{b_l!r}>",
               "c_ptr": "*fp32", "w_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "scm": "i32",
               "alpha": "fp32", "beta": "fp32", "kt_per_split": "i32"}
        consts = {"SPLIT": split, "BM": t.bm, "BN": t.bn, "BK": t.bk, "STAGES": t.stages, "GROUP": ws.WS_GROUP,
                  "CONSUMER_REGS": ws.WS_CONSUMER_REGS, "PRODUCER_REGS": ws.WS_PRODUCER_REGS}
        sig.update({k: "constexpr" for k in consts})
        k = triton_compile(GluonASTSource(ws._ws_kernel, sig, consts), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": ws.WS_WARPS, "maxnreg": ws.WS_MAXNREG})
        ptx = k.asm["ptx"]
        out[name + (" split" if split else "")] = dict(_wgmma_counts(ptx), **ptxas_notes(ptx),
                         setmaxnreg=sorted({int(v) for v in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)}),
                         **{"empty-slot arrivals": len(re.findall(r"mbarrier\.arrive\.shared", ptx)),
                            "shared bytes": k.metadata.shared, "smem_bytes (plan)": t.smem_bytes()})
    return out


def loop_body(ptx: str, containing: str | None = None) -> list[str]:
    """The instructions of the longest backward-branch loop in ``ptx`` (the kernel's K loop);
    with ``containing`` (a regex), the longest of the loops whose body matches it (a kernel with
    a second loop, e.g. mode=skinny's fixup sum, may have that one longer)."""
    lines = ptx.splitlines()
    labels = {ln.strip().split(":")[0]: i for i, ln in enumerate(lines) if re.match(r"^\s*\$L__\w+:", ln)}
    best: list[str] = []
    for i, ln in enumerate(lines):
        m = re.search(r"bra(?:\.uni)?\s+(\$L__\w+);", ln)
        if m and labels.get(m.group(1), i) < i and i - labels[m.group(1)] > len(best):
            body = lines[labels[m.group(1)]:i + 1]
            if containing is None or re.search(containing, "\n".join(body)):
                best = body
    return [ln.strip() for ln in best if ln.strip() and not ln.strip().startswith((".loc", "//", "$"))]
