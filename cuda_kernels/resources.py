"""What each kernel configuration costs on the chip: registers, shared memory, spills.

Every configuration declared in ``cuda_kernels.registry`` is compiled with nvcc
``--resource-usage`` from the same self-contained source the loader hands to NVRTC, plus one
line that takes the address of that template instantiation (which makes nvcc instantiate it).
One nvcc process per configuration for all requested architectures (a ``-gencode`` per arch;
nvcc still runs the front end and ptxas once per arch, and ptxas reports each arch in its own
section), in parallel, in a temporary directory that is removed afterwards. A line per finished compile goes to stderr, so
a full run (a minute on two cores) shows where it is. Needs nvcc (a CUDA toolkit, or NVIDIA's
``nvidia-cuda-nvcc`` wheel: the project's ``nvcc`` extra), not a GPU.

    python -m cuda_kernels.resources [--arch sm_80[,sm_90]] [--kernel cuda.09_double_buffered]
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Optional, Sequence

from . import loader
from .registry import Config, StageSpec, all_configs

# Per-SM / per-block limits used for the occupancy column and the tests.
ARCH_LIMITS = {
    "sm_80": dict(regs_per_sm=65536, max_regs_per_thread=255, smem_per_sm=164 * 1024,
                  smem_per_block=163 * 1024, max_threads_per_sm=2048, max_blocks_per_sm=32),
    "sm_86": dict(regs_per_sm=65536, max_regs_per_thread=255, smem_per_sm=100 * 1024,
                  smem_per_block=99 * 1024, max_threads_per_sm=1536, max_blocks_per_sm=16),
    "sm_89": dict(regs_per_sm=65536, max_regs_per_thread=255, smem_per_sm=100 * 1024,
                  smem_per_block=99 * 1024, max_threads_per_sm=1536, max_blocks_per_sm=24),
    "sm_90": dict(regs_per_sm=65536, max_regs_per_thread=255, smem_per_sm=228 * 1024,
                  smem_per_block=227 * 1024, max_threads_per_sm=2048, max_blocks_per_sm=32),
}
ARCH_LIMITS["sm_90a"] = ARCH_LIMITS["sm_90"]  # the same chip; "a": its arch-specific instructions
SMEM_RESERVED_PER_BLOCK = 1024  # the driver keeps 1 KiB of shared memory per resident block

_RE_REGS = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
NVCC_MISSING = ("nvcc not found on PATH, in $CUDA_HOME/bin, /usr/local/cuda/bin or an nvidia-cuda-nvcc wheel "
                "(pip install -e \".[nvcc]\" installs one)")


class NvccMissing(RuntimeError):
    pass


def nvcc_path() -> Optional[str]:
    p = shutil.which("nvcc")
    if p:
        return p
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    return wheel_nvcc(sys.path)


def nvdisasm_path() -> Optional[str]:
    """nvdisasm (SASS from a cubin, no GPU) next to nvcc, in a CUDA toolkit, or from NVIDIA's
    nvidia-cuda-nvdisasm wheel (the `nvcc` extra)."""
    cands = [shutil.which("nvdisasm")]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        cands.append(root and os.path.join(root, "bin", "nvdisasm"))
    for entry in sys.path:
        cands += sorted(glob.glob(os.path.join(entry, "nvidia", "cu*", "bin", "nvdisasm")), reverse=True)
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


def wheel_nvcc(search_path: Sequence[str]) -> Optional[str]:
    """nvcc from NVIDIA's nvidia-cuda-nvcc wheel (the project's `nvcc` extra), which installs it
    into site-packages/nvidia/cu<major>/bin: on no PATH. The newest CUDA major wins."""
    for entry in search_path:
        for cand in sorted(glob.glob(os.path.join(entry, "nvidia", "cu*", "bin", "nvcc")), reverse=True):
            if os.access(cand, os.X_OK):
                return cand
    return None


def instantiation_source(spec: StageSpec, cfg: Config) -> str:
    """The loader's source for the stage file plus a line that instantiates ``cfg``."""
    return (loader.source(spec.file)
            + "\n// instantiate the configuration under test (NVRTC gets it as a name expression)\n"
            + f"void* gemm_instance_under_test[] = {{ (void*)&{cfg.expr} }};\n")


def _nvcc_command(nvcc: str, archs: Sequence[str], src: str, out_stem: str) -> list[str]:
    if len(archs) == 1 and not archs[0].endswith("a"):
        target = ["-cubin", f"-arch={archs[0]}"]
        out = out_stem + ".cubin"
    else:
        # A cubin holds one arch, a fatbin one per -gencode. An arch-specific target (sm_90a) always
        # goes through -gencode: nvcc 13.0's -arch=sm_90a shorthand also runs a plain sm_90 pass,
        # which rejects wgmma and setmaxnreg.
        target = ["-cubin"] if len(archs) == 1 else ["-fatbin"]
        for arch in archs:
            target += ["-gencode", f"arch=compute_{arch.removeprefix('sm_')},code={arch}"]
        out = out_stem + (".cubin" if len(archs) == 1 else ".fatbin")
    return [nvcc, *target, *loader.NVRTC_OPTIONS, "--resource-usage", "-o", out, src]


def archs_for(spec: StageSpec, archs: Sequence[str]) -> list[str]:
    """The archs ``spec`` is compiled for: its own (``StageSpec.arch``, e.g. sm_90a for wgmma)
    whatever was asked, else the requested ones."""
    return [spec.arch] if spec.arch else list(archs)


def _row_from_report(row: dict, cfg: Config, arch: str, out: str) -> dict:
    """Fill ``row`` from the ptxas section of the kernel under test compiled for ``arch``."""
    # One section per (entry function, arch); non-template kernels of the file are always
    # compiled, so pick the section of the kernel under test by its mangled name (_Z<len><name>...).
    parts = re.split(r"(?=ptxas info\s*: Compiling entry function)", out)
    want = f"_Z{len(cfg.kernel)}{cfg.kernel}"
    mine = [p for p in parts if (m := _RE_ENTRY.search(p)) and m.group(1).startswith(want)
            and m.group(2) == arch]
    if len(mine) != 1:
        row.update(ok=False, log=f"expected one entry function {want}... for {arch} in the ptxas report, "
                                 f"got {_RE_ENTRY.findall(out)}\n{out[-4000:]}")
        return row
    sec = mine[0]
    regs, stack, smem = _RE_REGS.search(sec), _RE_STACK.search(sec), _RE_SMEM.search(sec)
    if not regs or not stack:
        row.update(ok=False, log=f"could not parse the ptxas report:\n{sec}")
        return row
    row.update(entry=_RE_ENTRY.search(sec).group(1), registers=int(regs.group(1)),
               smem_static=int(smem.group(1)) if smem else 0, smem_dynamic=cfg.smem_dynamic,
               stack=int(stack.group(1)), spill_stores=int(stack.group(2)), spill_loads=int(stack.group(3)))
    row["blocks_per_sm"] = blocks_per_sm(row, arch)
    return row


def compile_config_archs(spec: StageSpec, cfg: Config, archs: Sequence[str], workdir: str,
                         nvcc: Optional[str] = None) -> list[dict]:
    """One nvcc run for ``cfg`` on every arch in ``archs``; one row per arch, in that order."""
    nvcc = nvcc or nvcc_path()
    if not nvcc:
        raise NvccMissing(NVCC_MISSING)
    tag = re.sub(r"[^A-Za-z0-9]+", "_", f"{spec.file}_{cfg.expr}_{'_'.join(archs)}")
    src = os.path.join(workdir, tag + ".cu")
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(instantiation_source(spec, cfg))
    proc = subprocess.run(_nvcc_command(nvcc, archs, src, os.path.join(workdir, tag)),
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    rows = []
    for arch in archs:
        row = dict(kernel=spec.name, file=spec.file, config=cfg.label, expr=cfg.expr, arch=arch,
                   threads=cfg.threads, ok=proc.returncode == 0, log="" if proc.returncode == 0 else out[-4000:])
        rows.append(_row_from_report(row, cfg, arch, out) if proc.returncode == 0 else row)
    return rows


def compile_config(spec: StageSpec, cfg: Config, arch: str, workdir: str, nvcc: Optional[str] = None) -> dict:
    return compile_config_archs(spec, cfg, [arch], workdir, nvcc)[0]


def blocks_per_sm(row: dict, arch: str) -> int:
    """Resident blocks per SM allowed by registers, shared memory and threads."""
    lim = ARCH_LIMITS.get(arch, ARCH_LIMITS["sm_90"])
    threads = row["threads"]
    warps = -(-threads // 32)
    regs_per_warp = -(-(max(row["registers"], 1) * 32) // 256) * 256  # allocated per warp in 256s
    by_regs = (lim["regs_per_sm"] // regs_per_warp) // warps
    smem = row["smem_static"] + row["smem_dynamic"] + SMEM_RESERVED_PER_BLOCK
    by_smem = lim["smem_per_sm"] // smem
    by_threads = lim["max_threads_per_sm"] // threads
    return int(min(by_regs, by_smem, by_threads, lim["max_blocks_per_sm"]))


def _progress_line(done: int, total: int, rows: list[dict], seconds: float) -> str:
    r0 = rows[0]
    what = f"{r0['kernel']} {r0['config']}"
    if not all(r["ok"] for r in rows):
        return f"[{done:>{len(str(total))}}/{total}] {what}: FAILED ({seconds:.1f} s)"
    regs = "/".join(str(r["registers"]) for r in rows)
    archs = ",".join(r["arch"] for r in rows)
    return f"[{done:>{len(str(total))}}/{total}] {what} ({archs}): {regs} registers ({seconds:.1f} s)"


def resource_rows_by_arch(archs: Sequence[str], jobs: Optional[int] = None,
                          kernels: Optional[Sequence[str]] = None,
                          progress: Optional[Callable[[str], None]] = None) -> dict[str, list[dict]]:
    """Every registered configuration (or those of ``kernels``) compiled once for all ``archs``:
    ``{arch: rows in registry order}``. A stage declared for one arch (``StageSpec.arch``) is
    compiled for that arch only and listed under it (after the requested ones). ``progress``
    gets one line per finished compile."""
    nvcc = nvcc_path()
    if not nvcc:
        raise NvccMissing(NVCC_MISSING)
    archs = list(dict.fromkeys(archs))
    unknown = [a for a in archs if not re.fullmatch(r"sm_\d+a?", a)]
    if unknown:
        raise ValueError(f"--arch must look like sm_80 or sm_90; got {', '.join(unknown)}")
    items = all_configs()
    if kernels:
        missing = sorted(set(kernels) - {spec.name for spec, _ in items})
        if missing:
            raise ValueError(f"no CUDA kernel named {', '.join(missing)}; "
                             f"known: {', '.join(dict.fromkeys(spec.name for spec, _ in items))}")
        items = [(spec, cfg) for spec, cfg in items if spec.name in kernels]
    workers = jobs or os.cpu_count() or 2
    all_archs = list(dict.fromkeys([*archs, *(a for spec, _ in items for a in archs_for(spec, archs))]))
    if progress:
        progress(f"compiling {len(items)} CUDA configurations for {','.join(all_archs)} with {nvcc} "
                 f"({workers} in parallel)")
    results: list[Optional[list[dict]]] = [None] * len(items)
    with tempfile.TemporaryDirectory(prefix="gemm_resources_") as tmp:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            def one(i):
                t0 = time.perf_counter()
                spec, cfg = items[i]
                return i, compile_config_archs(spec, cfg, archs_for(spec, archs), tmp, nvcc), time.perf_counter() - t0
            futures = [ex.submit(one, i) for i in range(len(items))]
            for done, fut in enumerate(as_completed(futures), 1):
                i, rows, seconds = fut.result()
                results[i] = rows
                if progress:
                    progress(_progress_line(done, len(items), rows, seconds))
    out: dict[str, list[dict]] = {a: [] for a in all_archs}
    for rows in results:
        for row in rows:
            out[row["arch"]].append(row)
    return {a: rows for a, rows in out.items() if rows}


def resource_rows(arch: str = "sm_90", jobs: Optional[int] = None) -> list[dict]:
    """One row per registered configuration, compiled for ``arch``."""
    return resource_rows_by_arch([arch], jobs)[arch]


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def format_table(rows: list[dict]) -> str:
    head = ("kernel", "config", "threads", "regs", "smem B", "stack", "spill st/ld", "blocks/SM")
    lines = []
    for r in rows:
        if not r["ok"]:
            lines.append((r["kernel"], r["config"], str(r["threads"]), "FAILED", "", "", "", ""))
            continue
        smem = r["smem_static"] + r["smem_dynamic"]
        lines.append((r["kernel"], r["config"], str(r["threads"]), str(r["registers"]), str(smem),
                      str(r["stack"]), f"{r['spill_stores']}/{r['spill_loads']}", str(r["blocks_per_sm"])))
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*l) for l in lines]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cuda_kernels.resources",
                                 description="registers / shared memory / spills of every CUDA kernel configuration")
    ap.add_argument("--arch", default="sm_90",
                    help="GPU architecture(s) to compile for, comma-separated (default sm_90); "
                         "several archs share one nvcc run per configuration")
    ap.add_argument("--kernel", action="append", default=None, metavar="NAME",
                    help="only this CUDA kernel's configurations, e.g. cuda.09_double_buffered (repeatable)")
    ap.add_argument("--jobs", type=int, default=None, help="parallel nvcc processes (default: CPU count)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)
    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    try:
        by_arch = resource_rows_by_arch(archs, args.jobs, args.kernel,
                                        progress=None if args.quiet else _stderr_line)
    except (NvccMissing, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bad = []
    for i, (arch, rows) in enumerate(by_arch.items()):
        if i:
            print()
        print(f"arch {arch}  (nvcc --resource-usage; smem = static + dynamic bytes per block)")
        print(format_table(rows))
        bad += [r for r in rows if not r["ok"]]
    for r in bad:
        print(f"\n{r['kernel']} {r['config']} ({r['arch']}) failed to compile:\n{r['log']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
