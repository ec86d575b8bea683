"""What each kernel configuration costs on the chip: registers, shared memory, spills.

Every configuration declared in ``cuda_kernels.registry`` is compiled with
``nvcc -cubin -arch=<arch> --resource-usage`` from the same self-contained source the loader
hands to NVRTC, plus one line that takes the address of that template instantiation (which
makes nvcc instantiate it). One nvcc run per configuration, in parallel, in a temporary
directory that is removed afterwards. Needs nvcc (a CUDA toolkit), not a GPU.

    python -m cuda_kernels.resources [--arch sm_80]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

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
SMEM_RESERVED_PER_BLOCK = 1024  # the driver keeps 1 KiB of shared memory per resident block

_RE_REGS = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)'")


class NvccMissing(RuntimeError):
    pass


def nvcc_path() -> Optional[str]:
    p = shutil.which("nvcc")
    if p:
        return p
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    return None


def instantiation_source(spec: StageSpec, cfg: Config) -> str:
    """The loader's source for the stage file plus a line that instantiates ``cfg``."""
    return (loader.source(spec.file)
            + "\n// instantiate the configuration under test (NVRTC gets it as a name expression)\n"
            + f"void* gemm_instance_under_test[] = {{ (void*)&{cfg.expr} }};\n")


def compile_config(spec: StageSpec, cfg: Config, arch: str, workdir: str, nvcc: Optional[str] = None) -> dict:
    nvcc = nvcc or nvcc_path()
    if not nvcc:
        raise NvccMissing("nvcc not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin")
    tag = re.sub(r"[^A-Za-z0-9]+", "_", f"{spec.file}_{cfg.expr}_{arch}")
    src = os.path.join(workdir, tag + ".cu")
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(instantiation_source(spec, cfg))
    cmd = [nvcc, "-cubin", f"-arch={arch}", *loader.NVRTC_OPTIONS, "--resource-usage",
           "-o", os.path.join(workdir, tag + ".cubin"), src]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    row = dict(kernel=spec.name, file=spec.file, config=cfg.label, expr=cfg.expr, arch=arch,
               threads=cfg.threads, ok=proc.returncode == 0, log="" if proc.returncode == 0 else out[-4000:])
    if proc.returncode != 0:
        return row
    # One section per entry function; non-template kernels of the file are always compiled,
    # so pick the section of the kernel under test by its mangled name (_Z<len><name>...).
    parts = re.split(r"(?=ptxas info\s*: Compiling entry function)", out)
    want = f"_Z{len(cfg.kernel)}{cfg.kernel}"
    mine = [p for p in parts if (m := _RE_ENTRY.search(p)) and m.group(1).startswith(want)]
    if len(mine) != 1:
        row.update(ok=False, log=f"expected one entry function {want}... in the ptxas report, got "
                                 f"{_RE_ENTRY.findall(out)}\n{out[-4000:]}")
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


def resource_rows(arch: str = "sm_90", jobs: Optional[int] = None) -> list[dict]:
    """One row per registered configuration, compiled for ``arch``."""
    nvcc = nvcc_path()
    if not nvcc:
        raise NvccMissing("nvcc not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin")
    items = all_configs()
    with tempfile.TemporaryDirectory(prefix="gemm_resources_") as tmp:
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as ex:
            return list(ex.map(lambda sc: compile_config(sc[0], sc[1], arch, tmp, nvcc), items))


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
    ap.add_argument("--arch", default="sm_90", help="GPU architecture to compile for (default sm_90)")
    ap.add_argument("--jobs", type=int, default=None, help="parallel nvcc processes (default: CPU count)")
    args = ap.parse_args(argv)
    try:
        rows = resource_rows(args.arch, args.jobs)
    except NvccMissing as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"arch {args.arch}  (nvcc --resource-usage; smem = static + dynamic bytes per block)")
    print(format_table(rows))
    bad = [r for r in rows if not r["ok"]]
    for r in bad:
        print(f"\n{r['kernel']} {r['config']} failed to compile:\n{r['log']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
