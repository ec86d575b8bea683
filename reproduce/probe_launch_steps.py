"""Where a CUDA stage's launch spends its time: each step of the launch (the operand copies, the
GEMM, the split-K reduction or stream-K fixup) timed alone, the whole launch, and cuBLAS, by the
suite's one timing engine (compare.harness.timing.measure, L2 flushed, held). The steps alone sum
to less than the launch by the gaps between kernels and each one's ramp.

    python reproduce/probe_launch_steps.py KERNEL PRECISION MxNxK [MxNxK ...] > OUT.md
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's packages

import torch  # noqa: E402

from compare.harness import registry  # noqa: E402
from compare.harness.inputs import make_inputs  # noqa: E402
from compare.harness.problem import Problem  # noqa: E402
from compare.harness.timing import measure  # noqa: E402
from cuda_kernels import loader  # noqa: E402
from cuda_kernels.launch_steps import launcher  # noqa: E402


def _us(launch) -> float:
    return measure(launch, budget_s=0.3).median_s * 1e6


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    name, precision, shapes = argv[0], argv[1], argv[2:]
    kernel, cublas = registry.get(name), registry.get("cublas")
    print(f"# {name} {precision}, each step alone (us, median; {torch.cuda.get_device_name()})\n")
    print("| shape | cuBLAS | launch | steps alone | sum of steps | launch - sum |")
    print("|---|---:|---:|---|---:|---:|")
    for text in shapes:
        M, N, K = (int(x) for x in text.split("x"))
        p = Problem(M, N, K, precision=precision)
        inputs = make_inputs(p)
        launch = kernel.prepare(p, inputs, {})
        steps = getattr(launch, "steps", None)
        if steps is None:
            print(f"| {text} | - | - | {name}'s launch does not list its steps | - | - |")
            continue
        names = {id(fn): expr for (_, expr), fn in loader.backend()._functions.items()}
        alone = [(names.get(id(st[0]), "?"), _us(launcher(st))) for st in steps]
        whole = _us(launch)
        ref = _us(cublas.prepare(p, make_inputs(p), {}))
        parts = ", ".join(f"{n.split('(')[0]} {t:.1f}" for n, t in alone)
        total = sum(t for _, t in alone)
        print(f"| {text} | {ref:.1f} | {whole:.1f} | {parts} | {total:.1f} | {whole - total:.1f} |")
        del launch, inputs
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
