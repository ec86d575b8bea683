"""python -m compare.outputs.profile: why each stage is faster, from Nsight Compute's counters.

Every stage's header (cuda_kernels/NN_*.cu, the registry's ``idea``) says what it improves:
coalesced reads, fewer global loads, 128-bit loads, no shared-memory bank conflicts, fewer
barrier stalls. This command measures those claims on the GPU and puts them next to the time:

1. The parent process re-invokes itself under ``ncu --clock-control none --profile-from-start
   off`` as a child (``python -m compare.outputs.profile --_child SPEC``). The child prepares every
   selected kernel through compare.harness.runner (compile, autotune, first launch: all outside the
   profiled window), then does exactly the checked launch the suite does (C poisoned, same
   seeded inputs, same configuration) inside a cudaProfilerStart/Stop window, and checks its
   result. A one-thread marker kernel opens each window, so every kernel ncu saw is attributed
   to the right row whatever the kernel is called (cuBLAS's sm90_xmma_*, Triton's _tiled_kernel,
   the split-K reduction, the Triton M-major copy of A: all of them count).
2. The report is read back as CSV (``ncu --import --csv --page raw``) and joined per row:
   counters summed over the window's kernels, percentages weighted by each kernel's duration.
3. The parent times the same kernels with the suite's engine (compare.harness.runner.run) in its own
   process, after the child has exited: profiler replay never touches a timed run.

Exit status: 0 all rows ok; 1 a kernel FAILED its check or errored; 2 the run could not start
(bad arguments, no ncu on PATH, no GPU, GPU performance counters not permitted: ERR_NVGPUCTRPERM).
Nothing is written unless the run completes (atomic writes).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

from ..harness import gpuinfo, plugins, registry, sol
from ..harness.errors import UsageError
from ..harness.files import write_atomically as _write_atomically, write_text_atomically
from ..harness.problem import Problem
from ..harness.shapes import PROFILE_DEFAULT as DEFAULT_SHAPE
from ..harness.status import NO_NUMBER
from .profile_counters import (  # noqa: F401  (re-exported: the profile's one namespace)
    COUNTERS, MARKER, METRIC_BY_KEY, METRICS, Claim, Counter, Metric, build_rows, choose_metrics,
    claim_text, claims, claims_text, evaluate_claim, fill_metrics, join_window, min_dram_bytes, parse_query_metrics,
    parse_raw_csv, split_windows)
from . import selection
from .selection import SUFFIX_FORMATS
from .profile_render import info_lines, legend_lines, plot, to_csv, to_json, to_markdown, to_table  # noqa: F401

# torch, Triton, the runner and the inputs (torch: ~1 s) and the peaks probe (importing
# cuda_kernels registers its kernels) are imported by the functions that measure, so that --help
# and a bad flag exit before them; matplotlib (optional) by --plot.


# --- running ncu -------------------------------------------------------------------------------

class NcuUnavailable(UsageError):
    """ncu can't profile here (missing, or the driver forbids counters); one line, exit 2."""


def find_ncu(explicit: Optional[str]) -> str:
    path = shutil.which(explicit or "ncu")
    if not path:
        where = f"--ncu {explicit}" if explicit else "ncu (Nsight Compute) on PATH"
        raise NcuUnavailable(f"{where} not found: the profile needs Nsight Compute on a GPU machine "
                             f"(it ships with the CUDA toolkit: add its bin directory to PATH or pass --ncu)")
    return path


def _counters_forbidden(text: str) -> bool:
    return "ERR_NVGPUCTRPERM" in text


PERM_MESSAGE = ("ncu may not read the GPU performance counters here (ERR_NVGPUCTRPERM): the driver restricts "
                "them to admin users; see NVIDIA's ERR_NVGPUCTRPERM page (NVreg_RestrictProfilingToAdminUsers=0) "
                "or run as root")


def _unknown_metric(log: str) -> Optional[str]:
    m = re.search(r"[Ff]ailed to find metric\s+(?:regex:)?([A-Za-z0-9_.]+)", log)
    return m.group(1) if m else None


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return lines[-1] if lines else "?"


def query_available(ncu: str) -> Optional[set]:
    """Base metric names the installed ncu offers for this GPU; None when it can't say (every
    first-choice name is then requested as is)."""
    try:
        p = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if _counters_forbidden(p.stdout + p.stderr):
        raise NcuUnavailable(PERM_MESSAGE)
    names = parse_query_metrics(p.stdout)
    return names or None


def ncu_profile_command(ncu: str, metrics: list[str], report_base: str, child: list[str]) -> list[str]:
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--profile-from-start", "off",
            "--metrics", ",".join(metrics), "--export", report_base, "--force-overwrite", *child]


def import_csv(ncu: str, report: str) -> str:
    for extra in (["--print-units", "base"], []):
        p = subprocess.run([ncu, "--import", report, "--csv", "--page", "raw", *extra],
                           capture_output=True, text=True, timeout=300)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout
    raise RuntimeError(f"ncu --import {report} failed: {(p.stderr or p.stdout).strip()[-500:]}")


# --- the child: runs under ncu -----------------------------------------------------------------

def _marker():
    """A one-thread Triton kernel whose only job is its name: it opens each profiled window."""
    import triton
    import triton.language as tl

    @triton.jit
    def gemm_ladder_profile_marker(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1)

    import torch
    buf = torch.zeros(1, device="cuda", dtype=torch.int32)

    def fire():
        gemm_ladder_profile_marker[(1,)](buf)
    fire()  # compile now: the first call's JIT must not happen inside a window
    torch.cuda.synchronize()
    return fire


def child_main(spec_path: str) -> int:
    """Under ncu: for each entry, prepare (outside any window), then the checked launch inside
    a cudaProfilerStart/Stop window opened by the marker, then the check. Writes the manifest."""
    import torch
    from ..harness import runner
    from ..harness import check as _check
    from ..harness.inputs import make_inputs
    with open(spec_path) as f:
        spec = json.load(f)
    registry.load_plugins(spec.get("plugins"))
    fire = _marker()
    entries = []
    for item in spec["entries"]:
        k = registry.get(item["kernel"])
        p = Problem(**item["problem"])
        e = _entry(k, p)
        why = k.why_not(p)
        if why:
            e.update(status="unsupported", reason=why)
            entries.append(e)
            continue
        try:
            inputs = make_inputs(p)
            launch, _ = runner.prepare(k, p, inputs, k.parse_options(item.get("options") or {}))
            inputs.reset_c(poison=True)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            try:
                fire()
                launch()
                torch.cuda.synchronize()
            finally:
                torch.cuda.profiler.stop()
            e["profiled"] = True
            res = _check.check(p, inputs.C, inputs.ref, inputs.bound)
            e["config"] = runner.config_of(launch)
            e["rel_err"] = res.rel_err
            e.update(status="ok" if res.ok else "FAILED", reason="" if res.ok else res.message)
        except Exception as exc:  # one kernel's trouble is its row, as in the runner
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            e.update(status="error", reason=f"{type(exc).__name__}: {first}"[:300])
        entries.append(e)
        print(f"profiled {k.name} {p.shape} {p.precision}: {e['status']}", file=sys.stderr, flush=True)
    out = dict(spec, entries=entries)
    write_text_atomically(spec["manifest"], json.dumps(out, indent=1))
    return 0


def _entry(k, p) -> dict:
    return {"kernel": k.name, "family": k.family, "stage": k.stage, "shape": p.shape, "M": p.M, "N": p.N,
            "K": p.K, "precision": p.precision, "alpha": p.alpha, "beta": p.beta, "seed": p.seed,
            "status": "", "reason": "", "config": {}, "profiled": False}


# --- the parent --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m compare.outputs.profile",
        description="Nsight Compute counters beside every stage's time: why each stage of the ladder is faster.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="metrics:\n" + "\n".join(f"  {ln}" for ln in legend_lines()) +
               "\n\nexit codes: 0 all ok; 1 a kernel FAILED or errored; 2 could not start (no ncu, no GPU, "
               "counters not permitted, bad arguments)")
    selection.add_flags(p, default_shapes=DEFAULT_SHAPE, variants=False)
    p.add_argument("--format", choices=("table", "csv", "json", "markdown"), default=None,
                   help="default: from the -o suffix (.json, .csv, .md), else table")
    p.add_argument("--output", "-o", metavar="FILE")
    p.add_argument("--plot", metavar="FILE.png|.svg", help="bars of the ladder: time and each claimed metric")
    p.add_argument("--raw-dir", metavar="DIR", help="also keep ncu's report (.ncu-rep) and raw CSV here")
    p.add_argument("--no-time", action="store_true", help="counters only: skip the engine's timing")
    p.add_argument("--budget", type=float, default=1.0, help="engine seconds per kernel (default 1.0)")
    p.add_argument("--ncu", metavar="PATH", help="the ncu executable (default: ncu on PATH)")
    p.add_argument("--from-json", metavar="FILE", help="do not profile: render a JSON this command wrote")
    p.add_argument("--plugin", action="append", metavar="MODULE_OR_PATH",
                   help="import a file that registers kernels of your own, as python -m compare does; repeatable "
                        "(the process under ncu loads it too)")
    p.add_argument("--_child", metavar="SPEC", help=argparse.SUPPRESS)
    return p


def _validate_output(args) -> None:
    for path, what in ((args.output, "-o"), (args.plot, "--plot")):
        if path:
            parent = os.path.dirname(os.path.abspath(path))
            if os.path.isdir(path) or not os.path.isdir(parent) or not os.access(parent, os.W_OK):
                raise UsageError(f"{what} {path}: not a writable file path")
    if args.raw_dir and not os.path.isdir(args.raw_dir):
        raise UsageError(f"--raw-dir {args.raw_dir}: not a directory")
    implied = SUFFIX_FORMATS.get(os.path.splitext(args.output or "")[1].lower())
    if args.format and implied and implied != args.format:
        raise UsageError(f"--format {args.format} contradicts -o {args.output}")
    args.format = args.format or implied or "table"
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError as exc:
            raise UsageError(f"--plot needs matplotlib ({exc})") from None


def select_pairs(args) -> list:
    """(kernel, problem) pairs for the selection flags (``selection.select``, the CLI's), checked
    before any GPU work; cuBLAS only as --kernel names it, kernels that can't take a problem left out."""
    pairs = selection.select(args, default_shapes=[DEFAULT_SHAPE], baseline=False).pairs
    if not pairs:
        raise UsageError("nothing to profile: every selected kernel is unsupported on every shape")
    return pairs


def select_options(args, pairs) -> None:
    """--opt flags over the selected kernels -> args.raw_options (text, for the child under ncu)
    and args.parsed_options (for the engine's timing run); a bad flag is a UsageError here,
    before any GPU work."""
    selected = list({k.name: k for k, _ in pairs}.values())
    args.raw_options = registry.opt_flags(args.opt, selected)
    by_name = {k.name: k for k in selected}
    args.parsed_options = {n: by_name[n].parse_options(raw) for n, raw in args.raw_options.items()}


def _write_text(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def render(rows: list[dict], info: dict, fmt: str) -> str:
    if fmt == "json":
        return to_json(rows, info)
    if fmt == "csv":
        return to_csv(rows)
    if fmt == "markdown":
        return to_markdown(rows, info)
    return to_table(rows, info)


def child_spec(pairs, raw_options: dict, manifest: str, chosen: dict, missing: list) -> dict:
    """What the process under ncu is told: the plugins this process loaded (a --plugin path made
    absolute), then each launch's kernel, problem and --opt text (the child parses them)."""
    return {"manifest": manifest, "chosen": chosen, "missing": missing,
            "plugins": [os.path.abspath(s) if plugins.is_path(s) else s for s in registry.loaded_plugins()],
            "entries": [{"kernel": k.name, "problem": {"M": p.M, "N": p.N, "K": p.K, "precision": p.precision,
                                                      "alpha": p.alpha, "beta": p.beta, "seed": p.seed},
                         "options": raw_options.get(k.name, {})}
                        for k, p in pairs]}


def profile(pairs, args) -> tuple[list[dict], dict]:
    """Run the child under ncu, read the report back, join; then time in this process."""
    ncu = find_ncu(args.ncu)
    from ..harness.inputs import gpu_available
    if not gpu_available():
        raise UsageError("no CUDA GPU found (torch.cuda.is_available() is False): ncu profiles GPU kernels")
    available = query_available(ncu)
    chosen, missing = choose_metrics(available)
    metrics = list(dict.fromkeys(chosen.values()))
    with tempfile.TemporaryDirectory(prefix="gemm-profile-") as tmp:
        spec = child_spec(pairs, args.raw_options, os.path.join(tmp, "manifest.json"), chosen, missing)
        spec_path = os.path.join(tmp, "spec.json")
        _write_text(spec_path, json.dumps(spec))
        report_base = os.path.join(tmp, "profile")
        cmd = ncu_profile_command(ncu, metrics, report_base,
                                  [sys.executable, "-m", "compare.outputs.profile", "--_child", spec_path])
        print(f"profiling {len(pairs)} launch(es) under ncu ...", file=sys.stderr, flush=True)
        for _ in range(len(COUNTERS)):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            log = proc.stdout + proc.stderr
            if _counters_forbidden(log):
                raise NcuUnavailable(PERM_MESSAGE)
            # A name --query-metrics listed but this ncu still refuses: drop it and say so.
            bad = _unknown_metric(log) if proc.returncode != 0 else None
            if not bad or bad not in metrics:
                break
            metrics.remove(bad)
            for key in [k for k, v in chosen.items() if v == bad]:
                del chosen[key]
                missing.append(key)
            cmd = ncu_profile_command(ncu, metrics, report_base,
                                      [sys.executable, "-m", "compare.outputs.profile", "--_child", spec_path])
        if proc.returncode != 0 or not os.path.exists(spec["manifest"]):
            tail = "\n".join(log.strip().splitlines()[-15:])
            raise RuntimeError(f"ncu run failed (exit {proc.returncode}); its last lines:\n{tail}")
        with open(spec["manifest"]) as f:
            manifest = json.load(f)
        report = report_base + ".ncu-rep"
        raw = import_csv(ncu, report)
        if args.raw_dir:
            _write_atomically(os.path.join(args.raw_dir, "profile.ncu-rep"), lambda t: shutil.copyfile(report, t))
            write_text_atomically(os.path.join(args.raw_dir, "raw.csv"), raw)
            write_text_atomically(os.path.join(args.raw_dir, "manifest.json"), json.dumps(manifest, indent=1))
    rows = build_rows(manifest, parse_raw_csv(raw))
    if not args.no_time:
        # this GPU's peaks (measured once, then cached), for the rows' % SOL and the roofline
        from cuda_kernels.probes.peaks import ensure as measured_peaks
        measured_peaks(say=lambda s: print(s, file=sys.stderr, flush=True))
        _time_rows(rows, pairs, args)
    fill_metrics(rows)
    env = gpuinfo.environment().as_dict()
    info = {"gpu": env.get("gpu"), "ncu_version": ncu_version(ncu), "missing": missing, "chosen": chosen,
            "env": env, "command": shlex.join(["python", "-m", "compare.outputs.profile", *args.argv]),
            "ncu_command": shlex.join(cmd[:-5] + ["python", "-m", "compare.outputs.profile", "--_child", "SPEC"])}
    return rows, info


def _time_rows(rows: list[dict], pairs, args) -> None:
    """The suite's own numbers for the same kernels: compare.harness.runner.run in this process."""
    from ..harness import runner
    print(f"timing {len(pairs)} kernel(s) with the engine ...", file=sys.stderr, flush=True)
    results = runner.run(runner.baseline_pairs(pairs), measure_kw={"budget_s": args.budget},
                         options=args.parsed_options)
    by = {(r.kernel, r.shape, r.precision): r for r in results}
    for row in rows:
        r = by.get((row["kernel"], row["shape"], row["precision"]))
        if r is None:
            continue
        row["engine_median_ms"], row["engine_status"] = r.median_ms, r.status
        row["pct_cublas"] = r.pct_cublas
        row["pct_sol"], row["bound"], row["sol_flag"] = r.pct_sol, r.bound, r.sol_flag
        if r.status != "ok" and row["status"] == "ok":
            row["status"], row["reason"] = r.status, f"timing run: {r.reason}"


def roofline_path(plot_path: str) -> str:
    """The roofline beside the profile's bars: FILE.png -> FILE-roofline.png."""
    stem, ext = os.path.splitext(plot_path)
    return f"{stem}-roofline{ext}"


def roofline_points(rows: list[dict]) -> list[dict]:
    """The roofline's points of the profiled rows: each at the intensity of the minimum DRAM bytes
    and, where Nsight Compute counted DRAM bytes, also at its achieved intensity (FLOPs / those
    bytes). The rate is FLOPs over the engine's median time (ncu's own time without it)."""
    pts = []
    for r in rows:
        ms = r.get("engine_median_ms") or (r.get("metrics") or {}).get("ncu_ms")
        if r.get("status") != "ok" or not ms:
            continue
        M, N, K, beta = int(r["M"]), int(r["N"]), int(r["K"]), float(r.get("beta") or 0.0)
        f, b = sol.flops(M, N, K, beta), sol.min_bytes(M, N, K, beta)
        dram_mb = (r.get("metrics") or {}).get("dram_mb")
        pts.append({"label": f"{r['kernel']} [{r['precision']}]", "kernel": r["kernel"], "family": r.get("family"),
                    "precision": r["precision"], "shape": r.get("shape"), "intensity": f / b,
                    "tflops": f / (float(ms) * 1e-3) / 1e12, "cublas": r.get("family") == "cublas",
                    "achieved_intensity": f / (dram_mb * 1e6) if dram_mb else None, "sm_clock_mhz": None})
    return pts


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args._child:
        return child_main(args._child)
    try:
        _validate_output(args)
        if args.from_json:
            try:
                with open(args.from_json) as f:
                    data = json.load(f)
                rows, info = data["rows"], data["info"]
            except (OSError, ValueError, KeyError) as e:
                raise UsageError(f"--from-json {args.from_json}: {e}") from None
        else:
            registry.load_plugins(args.plugin)
            pairs = select_pairs(args)
            select_options(args, pairs)
            rows, info = profile(pairs, args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:   # the profile started and went wrong (ncu failed, report does not match)
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.plot and not any(r["status"] == "ok" for r in rows):
        print(f"error: --plot {args.plot}: no row is ok, nothing to draw", file=sys.stderr)
        return 1
    text = render(rows, info, args.format)
    if args.output:
        write_text_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    if args.plot:
        _write_atomically(args.plot, lambda t: plot(rows, t))
        path = roofline_path(args.plot)
        pts = roofline_points(rows)
        if pts:
            from .plot import plot_roofline
            _write_atomically(path, lambda t: plot_roofline(pts, t, info.get("env") or {}))
            print(f"roofline written to {path}", file=sys.stderr)
    return 1 if any(r["status"] in NO_NUMBER for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
