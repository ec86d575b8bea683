"""The alignment study of triton stream_k (docs/findings.md, "Alignment"): compile for sm_90
without a GPU and count the global copies by width, or read the load lanes from the TTGIR.

    python -m reproduce.stream_k_study --ptx [OUT.txt] | --ptx-check | --compile-check JSON_CASES
                                            | --load-lanes JSON_CASES | --compile-keys DISTRIBUTION
                                            | --judge-tiles ROWS.csv | --tma-b-ir | --gluon-ir | --ws-ir
                                            | --skinny-ir [tf32] | --skinny-scalar-ir | --skinny-check RUN.json...

--compile-keys (e.g. loguniform:1000:0): how many compiles of the GEMM kernel a generated corpus
needs in fp32, tf32 and tf32x3 (distinct constexprs, warps, stages and argument specialisations,
on 132 SMs), as the JIT specialises now and as it would with every int specialised.

--judge-tiles (e.g. results/h100/explore/round14/rows.csv): rows of tile variants measured side by
side (`--variant triton.stream_k:tile=...`, each row's config naming the tile and decomposition
that ran); for every shape and precision, the row of the tile and decomposition this checkout's
heuristic picks, against the "triton.stream_k" row (the heuristic of the run): geomean and worst
% of cuBLAS, per shape class. A pick with no measured row is counted as not measured.

--tma-b-ir / --gluon-ir: how the compiler feeds wgmma a tf32 B read as stored, in the plugins
docs/examples/tf32_b_by_tma.py (`tl.dot`) and docs/examples/tf32_gluon_swap.py (Gluon), compiled
for sm_90 (docs/findings.md, "tf32 on LLM projections"). --ws-ir: stream_k_gluon.py's
warp-specialised kernel (mode=ws) compiled the same way, with ptxas's registers, spills and notes.

--skinny-ir [tf32]: stream_k_skinny.py's kernel (mode=skinny) for N = 1..8 as SkinnyPlan launches it
(fp32, or tf32: inputs truncated to TF32 as loaded), compiled for sm_90: ptxas's registers and
spills, and the K loop's global loads by width, FFMAs, integer ANDs (tf32's truncation) and
shared-memory accesses (none: no layout conversion inside the loop).

--skinny-scalar-ir: the same kernel where A is read along K 4 bytes at a time (K % 4 != 0), for
N = 1..8: ptxas's registers and spills with the piece the plan picks (stream_k_skinny.default_tile)
and with the piece it replaced there (32x64 at N >= 3, 64x64 at N <= 2), compiled for sm_90.

--skinny-check RUN.json...: runs of ``python -m compare --kernel triton.stream_k ... --format
json`` judged against issue 43's goals for N <= 8 and M = 1: per precision and class, the
geomean and worst % of cuBLAS (tf32x3 against cuBLAS fp32) with PASS/FAIL (fp32 geomean >= 95%,
worst >= 80%; tf32x3 worst >= 100%; tf32 reported), each row's path (skinny or gemv for fp32 and
tf32x3; for tf32 the GEMV where TF32_ON_GEMV_PATH, the skinny kernel where
TF32_ON_SKINNY_PATH, else the tile GEMM), and the bytes a row must move (A, B and C once, C twice
with beta) over its median time, GB/s, for ours and cuBLAS's. Exit 1 on a FAIL.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from statistics import geometric_mean as geomean     # compare.outputs' is a later layer
from typing import Optional

import torch
import triton
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend

from compare.harness.options import RENAMED
from compare.harness.problem import DOT_PRECISION
from compare.harness.shapes import distribution_shapes

from triton_kernels import _gemm, stream_k_gemv, stream_k_plan, stream_k_skinny, tiled
from triton_kernels import _operands as ops
from triton_kernels.stream_k import KERNEL, KERNEL_ATOMIC
from triton_kernels.stream_k_gemv import GEMV_MAX_M
from triton_kernels.stream_k_gemv import default_tile as gemv_tile
from triton_kernels.stream_k_decomposition import Tile
from triton_kernels.stream_k_heuristic import (STAGES, TF32_ON_GEMV_PATH, TF32_ON_SKINNY_PATH, X3_MASK_NAN,
                                               choose_plan, x3_uses_ffma)
from triton_kernels.stream_k_kernels import _stream_k_kernel
from triton_kernels.stream_k_plan import _Plan
from triton_kernels.stream_k_skinny import SKINNY_MAX_N
from triton_kernels.stream_k_skinny import default_tile as skinny_tile
from triton_kernels._common import compile_sm90  # noqa: F401  (this study's compiler; tests use it too)

from reproduce.wgmma_ir import gluon_swap_ir, loop_body, ptxas_notes, tma_b_ir, ws_ir


_PTX_COUNTS = {
    "cp.async 16B": r"cp\.async\.cg\.shared\.global[^;]*, 0x10",
    "cp.async 8B": r"cp\.async\.ca\.shared\.global[^;]*, 0x8",
    "cp.async 4B": r"cp\.async\.ca\.shared\.global[^;]*, 0x4",
    "ld.global.v4": r"ld\.global[\w.]*\.v4",
    "ld.global.b32": r"ld\.global(?:\.(?!v\d)\w+)*\.b32\s",
    "st.global.v4": r"st\.global[\w.]*\.v4",
    "st.global.b32": r"st\.global(?:\.(?!v\d)\w+)*\.b32\s",
}


def ptx_counts(ptx: str) -> dict:
    return {k: len(re.findall(p, ptx)) for k, p in _PTX_COUNTS.items()}


def _ptx_study(out_path: Optional[str]) -> str:
    lines = ["# PTX for sm_90 (compiled on a CPU box by python -m reproduce.stream_k_study --ptx),",
             f"# triton {triton.__version__}; counts of global copy instructions in the kernel text",
             "# (loop bodies are counted once, not per iteration).", ""]
    for prec in ("fp32", "tf32"):
        for n in (1024, 1000, 1001):
            A, B, C = torch.empty(n, n), torch.empty(n, n), torch.empty(n, n)
            fn = _gemm.bare(tiled._tiled_kernel)
            args = dict(a_ptr=A, b_ptr=B, c_ptr=C, M=n, N=n, K=n, stride_am=n, stride_ak=1, stride_bk=n,
                        stride_bn=1, stride_cm=n, stride_cn=1, alpha=1.0, beta=0.0)
            ce = dict(PRECISION=DOT_PRECISION[prec], HAS_BETA=False, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32,
                      GROUP_M=8, EVEN_K=n % 32 == 0)
            k = compile_sm90(fn, args, ce, 8, STAGES[prec])
            lines.append(f"triton.tiled {prec} {n}^3 (B row-major as given, 128x128x32/8): "
                         f"{ptx_counts(k.asm['ptx'])}")
            for hint in (False, True):
                plan_args, plan_ce, t = _study_args(n, prec, hint)
                k = compile_sm90(_stream_k_kernel, plan_args, plan_ce, t.warps, t.stages)
                lines.append(f"triton.stream_k {prec} {n}^3 hint={'on' if hint else 'off'} "
                             f"(operands {plan_ce.pop('_layout')}): {ptx_counts(k.asm['ptx'])}")
        lines.append("")
    text = "\n".join(lines) + "\n"
    if out_path:
        tmp = out_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, out_path)
    return text


def _study_args(n: int, prec: str, hint: bool):
    A, B, C = torch.empty(n, n), torch.empty(n, n), torch.empty(n, n)
    plan = _Plan(A, B, C, 1.0, 0.0, prec, True, {"hint": hint, "sms": 132, "tile": Tile(128, 128, 32, 8, STAGES[prec])})
    av, bv = plan.a.view, plan.b.view
    args = dict(a_ptr=av, b_ptr=bv, c_ptr=C, w_ptr=C, a_small_ptr=av, b_small_ptr=bv, M=n, N=n, K=n, M_wrap=plan.a.wrap, N_wrap=plan.b.wrap,
                stride_am=av.stride(0), stride_ak=av.stride(1), stride_bk=bv.stride(0), stride_bn=bv.stride(1),
                stride_cm=C.stride(0), stride_cn=C.stride(1), alpha=1.0, beta=0.0, one=1.0, SK_TILES=plan.d.sk_tiles,
                SK_PROGRAMS=plan.d.sk_programs, SK_Q=plan.sk_q, SK_R=plan.sk_r, MAX_SEG=plan.d.max_segments)
    ce = dict(DOT_PRECISION=DOT_PRECISION[prec], SWAP_AB=plan.swap_ab, SPLIT_A=False, SPLIT_B=False, MASK_NAN=X3_MASK_NAN, ATOMIC=False, HAS_BETA=False, A_K_CONTIG=plan.a.k_contiguous,
              B_K_CONTIG=plan.b.k_contiguous, A_HINT=plan.a_hint, B_HINT=plan.b_hint, C_HINT=plan.c_hint,
              BLOCK_M=128, BLOCK_N=128,
              BLOCK_K=32, GROUP_M=8, EVEN_K=n % 32 == 0, _layout=plan.config["operands"])
    return args, ce, plan.tile


def _ptx_check() -> dict:
    """fp32 1000^3 stream-K for sm_90 with the 16-byte hint off and on: {hint: counts}
    (tests/test_triton_stream_k.py runs it in a subprocess without TRITON_INTERPRET)."""
    out = {}
    for hint in (False, True):
        args, ce, t = _study_args(1000, "fp32", hint)
        ce.pop("_layout")
        out["on" if hint else "off"] = ptx_counts(compile_sm90(_stream_k_kernel, args, ce, t.warps, t.stages).asm["ptx"])
    return out


_BLOCKED_RE = re.compile(r"^#(blocked\d*) = #ttg\.blocked<\{sizePerThread = \[([\d, ]+)\], "
                         r"threadsPerWarp = \[([\d, ]+)\], warpsPerCTA = \[[\d, ]+\], order = \[([\d, ]+)\]", re.M)
_TILE_LOAD_RE = re.compile(r"(?:async_copy_global_to_local|tt\.load) .*?: tensor<(\d+)x(\d+)x!tt\.ptr<f32>, #(blocked\d*)>")


def load_lanes(ttgir: str, block_m: int, block_n: int, block_k: int) -> dict:
    """Which axis consecutive lanes of a warp walk in a compiled kernel's global loads of
    BLOCK_M x BLOCK_K A tiles and BLOCK_K x BLOCK_N B tiles (from its TTGIR): {"a": {"m"|"k"},
    "b": {"k"|"n"}}. A coalesced load walks the operand's contiguous axis; a load whose lanes
    walk the other axis touches one row (or column) per lane. The A and B tile shapes must
    differ (BLOCK_M x BLOCK_K vs BLOCK_K x BLOCK_N) to be told apart."""
    assert (block_m, block_k) != (block_k, block_n), "A and B tiles of one shape can't be told apart"
    layouts = {name: ([int(x) for x in tpw.split(",")], [int(x) for x in order.split(",")])
               for name, _, tpw, order in _BLOCKED_RE.findall(ttgir)}
    shapes = {(block_m, block_k): ("a", "mk"), (block_k, block_n): ("b", "kn")}
    out = {"a": set(), "b": set()}
    for rows, cols, name in _TILE_LOAD_RE.findall(ttgir):
        if (int(rows), int(cols)) not in shapes:
            continue
        operand, axes = shapes[(int(rows), int(cols))]
        tpw, order = layouts[name]
        fastest = next((d for d in order if tpw[d] > 1), order[0])
        out[operand].add(axes[fastest])
    return out


def operand_load_lanes(M: int, N: int, K: int, precision: str, options: dict) -> dict:
    """load_lanes of triton.stream_k's GEMM kernel for this problem and ``options`` ({name:
    text}), compiled for sm_90 without a GPU."""
    (fn, args, ce, warps, stages), = [s for s in launch_specs(M, N, K, precision, 1.0, 0.0, True, options)
                                      if s[0].__name__ == "_stream_k_kernel"]
    ttgir = compile_sm90(fn, args, ce, warps, stages).asm["ttgir"]
    return load_lanes(ttgir, ce["BLOCK_M"], ce["BLOCK_N"], ce["BLOCK_K"])


def launch_specs(M: int, N: int, K: int, precision: str, alpha: float, beta: float, deterministic: bool,
                 options: dict) -> list:
    """What ``prepare(...)()`` of triton.stream_k (``deterministic``) / triton.stream_k_atomic
    launches for a contiguous problem and ``options`` ({name: text}, as the CLI takes them), as
    ``(jitted kernel, args, constexprs, num_warps, num_stages)``: the operand copies, the
    beta pre-scale, the GEMM kernel and the fixup, in launch order. The real ``launch()`` runs
    with the kernels' ``[grid]`` launches recorded instead of run (no GPU needed)."""
    kernel = KERNEL if deterministic else KERNEL_ATOMIC
    opts = kernel.parse_options({"sms": "132", **{k: str(v) for k, v in options.items()}})
    specs = []

    class _Recorder:
        def __init__(self, fn):
            self.fn = fn

        def __getitem__(self, grid):
            def record(*args, **kwargs):
                warps, stages = kwargs.pop("num_warps", 4), kwargs.pop("num_stages", 3)
                named = dict(zip(self.fn.arg_names, args), **kwargs)
                ce = {p.name: named.pop(p.name) for p in self.fn.params if p.is_constexpr}
                specs.append((self.fn, named, ce, warps, stages))
            return record

    # The names _Plan.launch (and GemvPlan.launch, SkinnyPlan.launch, ops' copies) look up.
    patched = [(vars(stream_k_plan), ("_stream_k_kernel", "_fixup_kernel", "_scale_tiles_kernel")),
               (vars(ops), ("_transpose_kernel", "_copy_rows_kernel", "_copy_pair_kernel")),
               (vars(stream_k_gemv), ("_gemv_kernel",)),
               (vars(stream_k_skinny), ("_skinny_kernel",))]
    saved = [(g, {n: g[n] for n in names}) for g, names in patched]
    try:
        for g, names in patched:
            for n in names:
                g[n] = _Recorder(g[n])
        A, B, C = torch.empty(M, K), torch.empty(K, N), torch.empty(M, N)
        _Plan(A, B, C, alpha, beta, precision, deterministic, opts).launch()
    finally:
        for g, old in saved:
            g.update(old)
    return specs


def _compile_check(cases: list) -> list:
    """Compile, for sm_90 (no GPU), every kernel each case's launch would run. ``cases``: [M, N,
    K, precision, alpha, beta, deterministic, {option: text}] lists; returns, per case, a list
    of "<kernel>: ok" / "<kernel>: <full error>" strings."""
    out = []
    for M, N, K, precision, alpha, beta, deterministic, options in cases:
        rows = []
        for fn, args, ce, warps, stages in launch_specs(M, N, K, precision, alpha, beta, deterministic, options):
            try:
                compile_sm90(fn, args, ce, warps, stages)
                rows.append(f"{fn.__name__}: ok")
            except Exception as e:          # the whole message: CompilationError's first line says little
                rows.append(f"{fn.__name__}: {type(e).__name__}: {e}")
        out.append(rows)
    return out


def compile_keys(spec: str) -> dict:
    """{precision: (compiles now, compiles were every int specialised)} over a distribution."""

    out = {}
    for prec in ("fp32", "tf32", "tf32x3"):
        now, every = set(), set()
        for M, N, K in distribution_shapes(spec):
            for fn, args, ce, w, st in launch_specs(M, N, K, prec, 1.0, 0.0, True, {}):
                if fn is not _stream_k_kernel:
                    continue
                base = (tuple(sorted(ce.items())), w, st)
                for keys, honour in ((now, True), (every, False)):
                    sig = tuple(native_specialize_impl(BaseBackend, args[p.name], False,
                                                       not (honour and p.do_not_specialize), True)[1]
                                for p in fn.params if p.name not in ce)
                    keys.add(base + sig)
        out[prec] = (len(now), len(every))
    return out


def shape_class(M: int, N: int, K: int) -> str:
    """The weak shape classes (the held-out sets of compare/harness/shapes.py), then the rest."""
    if M <= 8:
        return "few rows (M <= 8)"
    if M <= 64 and N <= 64:
        return "tiny output, long K"
    if 256 <= M <= 1024 and K >= 8192 and N >= 1000:
        return "LLM, K >= 8192"
    return "long K" if K >= 4 * max(M, N) else "other"


ROWS_COLUMNS = ("precision", "shape", "M", "N", "K", "kernel", "status", "median_ms", "pct_cublas", "tile",
                "decomposition", "rel_err")


def rows_csv(paths: list[str]) -> str:
    """The rows of ``python -m compare ... --format json -o FILE`` runs as the CSV --judge-tiles
    reads (one line per row: the variant label in ``kernel``, the tile and decomposition that ran)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(ROWS_COLUMNS)
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["results"]:
                cfg = r.get("config") or {}
                deco = cfg.get("decomposition", cfg.get("mode", ""))
                w.writerow([r["precision"], r["shape"], r["M"], r["N"], r["K"], r["kernel"], r["status"],
                            r.get("median_ms") if r.get("median_ms") is not None else "",
                            round(r["pct_cublas"], 2) if r.get("pct_cublas") is not None else "",
                            cfg.get("tile", ""), deco, r.get("rel_err") if r.get("rel_err") is not None else ""])
    return out.getvalue()


def _skinny_ptx(M: int, N: int, K: int, precision: str, options: dict | None = None):
    """(constexprs, warps, PTX) of mode=skinny's kernel as SkinnyPlan launches it, compiled for sm_90."""
    for fn, args, ce, warps, stages in launch_specs(M, N, K, precision, 1.0, 0.0, True,
                                                    {"mode": "skinny", **(options or {})}):
        if fn.__name__ == "_skinny_kernel":
            return ce, warps, compile_sm90(fn, args, ce, warps, stages).asm["ptx"]
    raise ValueError(f"{M}x{N}x{K} {precision}: no skinny kernel launched")


def skinny_ir(M: int = 4096, K: int = 8192, precision: str = "fp32") -> dict:
    """mode=skinny's kernel for N = 1..8 on an M x K row-major A, as launched in ``precision``
    (tf32: the inputs truncated to TF32 on the FFMA pipe), compiled for sm_90."""
    out = {}
    for n in range(1, 9):
        ce, warps, ptx = _skinny_ptx(M, n, K, precision)
        body = "\n".join(loop_body(ptx, containing=r"fma\.rn\.f32"))   # the K loop, not the fixup's sum
        notes = ptxas_notes(ptx)
        out[f"N={n} {ce['BLOCK_M']}x{ce['BLOCK_K']}/{warps} k_group={ce['K_GROUP']}"] = {
            "registers": notes["registers"], "spill bytes": notes["spill bytes"],
            "loop: 16-byte loads": len(re.findall(r"ld\.global(?:\.\w+)*\.v4", body)),
            "loop: other loads": len(re.findall(r"ld\.global(?!(?:\.\w+)*\.v4)", body)),
            "loop: fma": len(re.findall(r"fma\.rn\.f32", body)),
            "loop: and.b32": len(re.findall(r"and\.b32", body)),
            "loop: shared or barrier": len(re.findall(r"\.shared|bar\.sync", body))}
    return out


def skinny_scalar_ir(M: int = 30460, K: int = 3170) -> dict:
    """mode=skinny's kernel with A read along K 4 bytes at a time (K % 4 != 0), N = 1..8: ptxas's
    registers and spills for the default piece and for the one the 4-byte-load rules replaced."""
    from triton_kernels.stream_k_skinny import SKINNY_TILE, SKINNY_TILE_NARROW
    out = {}
    for n in range(1, 9):
        row = {}
        replaced = SKINNY_TILE_NARROW if n <= 2 else SKINNY_TILE
        for key, options in (("default", {}), ("replaced", {"skinny_tile": replaced.name})):
            ce, warps, ptx = _skinny_ptx(M, n, K, "fp32", options)
            notes = ptxas_notes(ptx)
            row[key] = {"piece": f"{ce['BLOCK_M']}x{ce['BLOCK_K']}/{warps}", "k_group": ce["K_GROUP"],
                        "registers": notes["registers"], "spill bytes": notes["spill bytes"]}
        out[f"N={n}"] = row
    return out


SKINNY_GOALS = {"fp32": (95.0, 80.0), "tf32x3": (None, 100.0), "tf32": (None, None)}


def skinny_check(paths: list[str]) -> tuple[list[str], bool]:
    """(lines, ok) for --skinny-check: the N <= 8 and M = 1 rows of triton.stream_k in these runs."""
    rows = []
    for path in paths:
        with open(path) as f:
            rows += json.load(f)["results"]
    cublas = {}
    for r in rows:
        if r["kernel"] == "cublas" and r["status"] == "ok" and r.get("median_ms"):
            cublas[(r["precision"], r["shape"])] = r["median_ms"]
    lines, ok, groups = [], True, {}
    for r in rows:
        if r["kernel"] != "triton.stream_k" or not (r["N"] <= 8 or r["M"] == 1):
            continue
        M, N, K, prec = r["M"], r["N"], r["K"], r["precision"]
        cls = "M = 1" if M == 1 else "N <= 8"
        deco = (r.get("config") or {}).get("decomposition", "?")
        tiles = prec == "tf32" and not (TF32_ON_GEMV_PATH if M == 1 else TF32_ON_SKINNY_PATH)
        want = ("dp", "hybrid", "ws") if tiles else ("gemv",) if M == 1 else ("skinny",)
        if r["status"] != "ok" or r.get("pct_cublas") is None:
            why = f"status {r['status']} {r.get('reason', '')}" if r["status"] != "ok" else "not timed (--check or --interpret?)"
            lines.append(f"FAIL {prec:6s} {r['shape']}: {why}")
            ok = False
            continue
        if deco not in want:
            lines.append(f"FAIL {prec:6s} {r['shape']}: ran {deco}, the rule says {'/'.join(want)}")
            ok = False
        moved = 4 * (M * K + K * N + (2 if r.get("beta") else 1) * M * N)
        base = cublas.get(("fp32" if prec == "tf32x3" else prec, r["shape"]))
        bw = f"{moved / r['median_ms'] / 1e6:7.0f} GB/s (cuBLAS {moved / base / 1e6:7.0f})" if base else ""
        lines.append(f"     {prec:6s} {r['shape']:>20s} {deco:7s} {r['pct_cublas']:6.1f}% of cuBLAS {bw}")
        groups.setdefault((prec, cls), []).append((r["pct_cublas"], r["shape"]))
    for (prec, cls), vals in sorted(groups.items()):
        g, (w, ws) = geomean([v for v, _ in vals]), min(vals)
        gmin, wmin = SKINNY_GOALS.get(prec, (None, None))
        bad = (gmin is not None and g < gmin) or (wmin is not None and w < wmin)
        ok &= not bad
        goal = ", ".join(f"{n} >= {v:g}%" for n, v in (("geomean", gmin), ("worst", wmin)) if v is not None) or "no goal"
        lines.append(f"{'FAIL' if bad else 'PASS' if goal != 'no goal' else 'INFO'} {prec:6s} {cls:7s} "
                     f"{len(vals):3d} shapes: geomean {g:6.1f}%, worst {w:6.1f}% ({ws}) [{goal}]")
    if not groups:
        lines.append("FAIL no triton.stream_k rows with N <= 8 or M = 1 in these runs")
        ok = False
    return lines, ok


def judge_tiles(path: str, sms: int = 132) -> list[str]:
    measured: dict = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["status"] == "ok" and r["pct_cublas"] and r["kernel"].startswith("triton.stream_k"):
                key = (r["precision"], int(r["M"]), int(r["N"]), int(r["K"]))
                # a row recorded before triton.stream_k's mode=sk became mode=hybrid, spelled as now
                dec = RENAMED.get(f"mode={r['decomposition']}", f"={r['decomposition']}").partition("=")[2]
                measured.setdefault(key, {})[(r["tile"], dec)] = float(r["pct_cublas"])
                if r["kernel"] == "triton.stream_k":
                    measured[key]["run's heuristic"] = float(r["pct_cublas"])
    groups: dict = {}
    missing = []
    for (prec, M, N, K), rows in sorted(measured.items()):
        # tf32x3_split=ffma runs fp32's plan: its row is the fp32 row of the same tile.
        ffma = prec == "tf32x3" and x3_uses_ffma(M, N, K, sms)
        if M <= GEMV_MAX_M and (ffma or prec == "fp32" or (prec == "tf32" and TF32_ON_GEMV_PATH)):
            # The GEMV, its tile by B's alignment (rows are row-major B: 16-byte loads iff N % 4 == 0).
            chosen = (gemv_tile(N % 4 == 0, N).dims, "gemv")
        elif N <= SKINNY_MAX_N and (ffma or prec == "fp32" or (prec == "tf32" and TF32_ON_SKINNY_PATH)):
            chosen = (skinny_tile(N, K % 4 != 0, K).dims(N), "skinny")   # A row-major: 4-byte loads iff K % 4
        else:
            tile, d = choose_plan(M, N, K, "fp32" if ffma else prec, sms)
            chosen = (tile.dims, d.mode)
        pick = (measured.get(("fp32", M, N, K), {}) if ffma else rows).get(chosen)
        if pick is None or "run's heuristic" not in rows:
            missing.append(f"{prec} {M}x{N}x{K}")
            continue
        for cls in (shape_class(M, N, K), "all"):
            groups.setdefault((prec, cls), []).append((rows["run's heuristic"], pick))
    out = [f"# {path}: the run's heuristic -> this checkout's, % of cuBLAS (geomean / worst)", ""]
    for (prec, cls), pairs in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] == "all", g[0][1])):
        old, new = [a for a, _ in pairs], [b for _, b in pairs]
        out.append(f"{prec:7s} {cls:22s} {len(pairs):3d} shapes: geomean {geomean(old):6.1f} -> {geomean(new):6.1f}, "
                   f"worst {min(old):6.1f} -> {min(new):6.1f}")
    if missing:
        out.append(f"not measured (the pick has no row): {', '.join(missing)}")
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ptx"]:
        print(_ptx_study(sys.argv[2] if len(sys.argv) > 2 else None), end="")
    elif sys.argv[1:2] == ["--ptx-check"]:
        print(json.dumps(_ptx_check()))
    elif sys.argv[1:2] == ["--compile-check"] and len(sys.argv) == 3:
        print(json.dumps(_compile_check(json.loads(sys.argv[2]))))
    elif sys.argv[1:2] == ["--load-lanes"] and len(sys.argv) == 3:
        print(json.dumps([{k: sorted(v) for k, v in operand_load_lanes(*case).items()}
                          for case in json.loads(sys.argv[2])]))
    elif sys.argv[1:2] == ["--compile-keys"] and len(sys.argv) == 3:
        for prec, (now, every) in compile_keys(sys.argv[2]).items():
            print(f"{prec}: {now} compiles of _stream_k_kernel (with every int specialised: {every})")
    elif sys.argv[1:2] == ["--tma-b-ir"]:
        print(json.dumps(tma_b_ir(), indent=1))
    elif sys.argv[1:2] == ["--gluon-ir"]:
        print(json.dumps(gluon_swap_ir(), indent=1))
    elif sys.argv[1:2] == ["--ws-ir"]:
        print(json.dumps(ws_ir(), indent=1))
    elif sys.argv[1:2] == ["--skinny-ir"] and len(sys.argv) <= 3:
        print(json.dumps(skinny_ir(precision=sys.argv[2] if len(sys.argv) == 3 else "fp32"), indent=1))
    elif sys.argv[1:2] == ["--skinny-scalar-ir"]:
        print(json.dumps(skinny_scalar_ir(), indent=1))
    elif sys.argv[1:2] == ["--skinny-check"] and len(sys.argv) >= 3:
        lines, ok = skinny_check(sys.argv[2:])
        print("\n".join(lines))
        sys.exit(0 if ok else 1)
    elif sys.argv[1:2] == ["--judge-tiles"] and len(sys.argv) == 3:
        print("\n".join(judge_tiles(sys.argv[2])))
    elif sys.argv[1:2] == ["--rows"] and len(sys.argv) >= 3:
        print(rows_csv(sys.argv[2:]), end="")
    else:
        print("usage: python -m reproduce.stream_k_study --ptx [OUT.txt] | --ptx-check | --compile-check JSON_CASES"
              " | --load-lanes JSON_CASES | --compile-keys DISTRIBUTION | --judge-tiles ROWS.csv | --tma-b-ir"
              " | --gluon-ir | --ws-ir | --skinny-ir | --skinny-scalar-ir | --skinny-check RUN.json..."
              " | --rows RUN.json... > ROWS.csv",
              file=sys.stderr)
        sys.exit(2)
