"""What one launch that only reads N bytes takes, timed as a row is (the engine, L2 flushed by a
read): the ceiling for "% of the device copy" on a bandwidth-bound row of that size
(docs/findings.md, "The L2 flush"). cuda_kernels/probes/dram_read.cu, grid-stride 16-byte loads
with four in flight a thread, at 2, 4 and 8 blocks of 256 threads per SM (the best is reported
per size), checked (the blocks' sums of a buffer of ones must add up to its element count).

    python reproduce/read_probe.py OUT.json [--sizes-mib 16,32,64,128,256,1024] [--budget 0.3]

Exit status: 0 measured; 1 a sum was wrong (that launch is not timed); 2 no GPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the repository's packages

BLOCK = 256
BLOCKS_PER_SM = (2, 4, 8)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--sizes-mib", default="16,32,64,128,256,1024")
    ap.add_argument("--budget", type=float, default=0.3)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 2
    import cupy
    import numpy as np
    from compare.harness import timing
    from cuda_kernels import loader
    sizes = [int(s) for s in args.sizes_mib.split(",")]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    mod = cupy.RawModule(code=loader.source("probes/dram_read.cu"), options=loader.NVRTC_OPTIONS,
                         name_expressions=["dram_read"])
    fn = mod.get_function("dram_read")
    stream = loader._cupy_stream(torch.cuda.current_stream().cuda_stream)
    rows, failed = [], []
    for mib in sizes:
        nbytes = mib * 2**20
        src = torch.ones(nbytes // 4, device="cuda")
        n4 = nbytes // 16
        for bps in BLOCKS_PER_SM:
            grid = sms * bps
            out = torch.zeros(grid, device="cuda")
            s_cp, o_cp = cupy.from_dlpack(src), cupy.from_dlpack(out)

            def launch(g=grid, s=s_cp, o=o_cp):
                with stream:
                    fn((g,), (BLOCK,), (s, np.int64(n4), o))
            launch()
            torch.cuda.synchronize()
            total = float(out.double().sum())
            if total != nbytes // 4:
                failed.append(f"{mib} MiB, {bps} blocks/SM: sum {total} != {nbytes // 4}")
                continue
            m = timing.measure(launch, budget_s=args.budget)
            rows.append({"mib": mib, "blocks_per_sm": bps, "grid": grid, "median_us": round(m.median_s * 1e6, 2),
                         "gbps": round(nbytes / m.median_s / 1e9, 1), "noise": round(m.noise, 4),
                         "sm_clock_mhz": m.sm_clock_before_mhz})
            print(f"{mib:5d} MiB {bps} blocks/SM: {m.median_s * 1e6:8.1f} us {nbytes / m.median_s / 1e9:7.1f} GB/s",
                  flush=True)
        del src
    best = {}
    for r in rows:
        if r["mib"] not in best or r["median_us"] < best[r["mib"]]["median_us"]:
            best[r["mib"]] = r
    doc = {"command": "python reproduce/read_probe.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "gpu": torch.cuda.get_device_name(),
           "torch": torch.__version__, "cupy": cupy.__version__, "rows": rows, "failed": failed,
           "best": [best[m] for m in sorted(best)]}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print("best per size:")
    for m in sorted(best):
        print(f"  {m:5d} MiB: {best[m]['median_us']:8.1f} us, {best[m]['gbps']:7.1f} GB/s ({best[m]['blocks_per_sm']} blocks/SM)")
    for f_ in failed:
        print("FAILED (not timed):", f_)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
