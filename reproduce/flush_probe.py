"""What the L2 flush before each sample costs the launch that follows it (docs/findings.md, "The
L2 flush"). Every launch is timed by the engine (compare.harness.timing.measure) four times over,
with the flush done four ways, in alternating rounds:

  write       zero a buffer of 2x the L2 (what do_bench and nvbench do; this engine before)
  read        sum that buffer (the engine's flush now): L2 is left holding clean lines
  write_read  zero it, then sum a second such buffer: dirty lines are written back inside the flush
  none        no flush (warm L2: the launch's operands partly still cached)

The launches: a read-only stream (float32 torch.sum of 8 / 64 / 256 MiB: the first fits the L2,
so "none" shows what a flush must remove), a device copy (torch's copy_, 8 MiB to 1 GiB of
read + write traffic: what the speed of light's copy peak reaches at each size when timed as a
row is) and GEMM rows (cuBLAS and both families' general kernels) on matrix-vector shapes (the
first, 8 MiB of A, fits the L2), each checked against float64 before it is timed.

    python reproduce/flush_probe.py OUT.json [--rounds 2] [--budget 0.3]

Exit status: 0 measured; 1 a GEMM row was wrong (it is not timed); 2 no GPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the repository's compare package

MODES = ("write", "read", "write_read", "none")
READ_MIB = (8, 64, 256)
COPY_MIB = (8, 64, 256, 1024)
GEMMS = ("2048x8x1024", "16384x8x1024", "4096x6x4096", "32x8x524288", "1x128x131072", "16384x4x16384")
KERNELS = ("cublas", "cuda.11_stream_k", "triton.stream_k")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.3)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 2
    from compare.harness import registry, runner, timing
    from compare.harness.inputs import make_inputs
    from compare.harness.problem import Problem, parse_shape

    class FlushGPU(timing.TorchGPU):
        """The engine's GPU pieces with the flush done by ``mode``."""

        def __init__(self, mode: str):
            super().__init__(flush=mode != "none")
            self.mode = mode
            if mode in ("write", "write_read"):
                buf, _ = timing.l2_flush_buffer()
                self.wbuf = torch.empty_like(buf)

        def flush_l2(self) -> None:
            if self.mode in ("write", "write_read"):
                self.wbuf.zero_()
            if self.mode in ("read", "write_read"):
                super().flush_l2()

    launches = []   # (name, shape, min bytes, launch)
    for mib in READ_MIB:
        x = torch.ones(mib * 2**20 // 4, device="cuda")
        s = torch.zeros((), device="cuda")
        launches.append((f"torch.sum {mib} MiB", "", mib * 2**20,
                         lambda x=x, s=s: torch.sum(x, dim=0, out=s)))
    for mib in COPY_MIB:        # read + write: mib in all, as the copy peak counts them
        src = torch.ones(mib * 2**20 // 8, device="cuda")
        dst = torch.empty_like(src)
        launches.append((f"copy_ {mib} MiB", "", mib * 2**20, lambda d=dst, s=src: d.copy_(s)))
    failed = []
    for shape in GEMMS:
        M, N, K = parse_shape(shape)
        p = Problem(M, N, K, "fp32")
        inputs = make_inputs(p)
        for name in KERNELS:
            k = registry.get(name)
            launch, _ = runner.prepare(k, p, inputs)
            res = runner.checked_run(p, inputs, launch)
            if not res.ok:
                failed.append(f"{name} {shape}: {res.message}")
                continue
            launches.append((name, shape, 4 * (M * K + K * N + M * N), launch))

    rows = {(n, sh, m): [] for n, sh, _, _ in launches for m in MODES}
    clocks = set()
    gpus = {m: FlushGPU(m) for m in MODES}
    for r in range(args.rounds):
        order = MODES if r % 2 == 0 else MODES[::-1]
        for n, sh, nbytes, launch in launches:
            for m in order:
                meas = timing.measure(launch, gpu=gpus[m], budget_s=args.budget)
                rows[(n, sh, m)].append(meas.median_s)
                clocks.update(c for c in (meas.sm_clock_before_mhz, meas.sm_clock_after_mhz) if c)
                print(f"round {r} {n:>18} {sh:>14} {m:>10} {meas.median_s * 1e6:8.1f} us", flush=True)
    out = {"command": "python reproduce/flush_probe.py " + " ".join(argv or sys.argv[1:]),
           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "gpu": torch.cuda.get_device_name(), "l2_bytes": 2 * timing.l2_flush_buffer()[0].numel(),
           "torch": torch.__version__, "sm_clocks_mhz": sorted(clocks),
           "failed": failed, "rows": []}
    for n, sh, nbytes, _ in launches:
        row = {"launch": n, "shape": sh, "min_bytes": nbytes}
        for m in MODES:
            med = statistics.median(rows[(n, sh, m)])
            row[f"{m}_us"] = round(med * 1e6, 2)
            row[f"{m}_rounds_us"] = [round(t * 1e6, 2) for t in rows[(n, sh, m)]]
            row[f"{m}_gbps"] = round(nbytes / med / 1e9, 1)
        out["rows"].append(row)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{'launch':>18} {'shape':>14} " + " ".join(f"{m:>12}" for m in MODES) + "  write/read")
    for row in out["rows"]:
        print(f"{row['launch']:>18} {row['shape']:>14} " + " ".join(f"{row[m + '_us']:9.1f} us" for m in MODES)
              + f"  {row['write_us'] / row['read_us']:.2f}x")
    for f_ in failed:
        print("FAILED (not timed):", f_)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
