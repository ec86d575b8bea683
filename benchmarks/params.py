"""Which asv benchmarks exist: every class's params, read from compare.harness.registry (groups,
kernels, precisions) and the shape catalogue (compare/harness/shapes.py), under the two
environment variables that select them (never what a kernel does):

``GEMM_BENCH_SET`` = quick | default | full (shapes per group; ``GEMM_BENCH_QUICK=1`` = quick),
``GEMM_BENCH_PRECISIONS`` = a comma list (e.g. ``fp32``) keeps only those precisions.

No public name here starts with an asv prefix (``time_``, ``track_``, ...): asv imports every
module of benchmarks/ and this one holds no benchmark.
"""
from __future__ import annotations

import hashlib
import os

from compare.harness import registry
from compare.harness import shapes as shape_catalogue
from compare.harness.problem import PRECISIONS, parse_shape

# Bump a class's version only when what it measures changes (engine, problem definition):
# asv keeps history across commits of one benchmark version only.
VERSION = "1"

SHAPE_SETS = shape_catalogue.ASV_GROUP_SETS      # the shape catalogue: compare/harness/shapes.py
# asv class of a ladder group (compare/harness/registry.py GROUPS): its CamelCase name.
CLASS_NAMES = {g: "".join(w.capitalize() for w in g.split("_")) for g in registry.GROUPS}
TENSOR_CORE_SUFFIX = "TensorCore"
PCT_SUFFIX = "PctCublas"
SWEEP_CLASS_NAMES = {"cuda": "SweepCuda", "triton": "SweepTriton"}
# The bandwidth-bound and small classes, one shape each (compare/harness/shapes.py).
SKINNY_SET = "asv_skinny"


def bench_set() -> str:
    if os.environ.get("GEMM_BENCH_QUICK", "").strip() not in ("", "0"):
        return "quick"
    name = os.environ.get("GEMM_BENCH_SET", "").strip() or "default"
    if name not in SHAPE_SETS:
        raise ValueError(f"GEMM_BENCH_SET={name!r}: valid sets are {', '.join(SHAPE_SETS)}")
    return name


def precisions() -> list[str]:
    text = os.environ.get("GEMM_BENCH_PRECISIONS", "").strip()
    if not text:
        return list(PRECISIONS)
    wanted = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in wanted if p not in PRECISIONS]
    if bad:
        raise ValueError(f"GEMM_BENCH_PRECISIONS: unknown precision {bad[0]!r}; known: {', '.join(PRECISIONS)}")
    return [p for p in PRECISIONS if p in wanted]


def canonical_shape(text: str) -> str:
    return "x".join(str(d) for d in parse_shape(text))


def shapes(group: str) -> list[str]:
    return [canonical_shape(s) for s in SHAPE_SETS[bench_set()][group]]


def shape_text(shape) -> str:
    return "x".join(str(d) for d in shape)


def digest(shapes) -> str:
    return hashlib.sha1(",".join(shapes).encode()).hexdigest()[:8]


def suites(group: str) -> list[tuple[str, list[str], list[str]]]:
    """(class name, kernel names, precisions) of the classes of one group, from the registry."""
    ks = registry.select(group)
    allowed = precisions()
    out = []
    if "fp32" in allowed:
        names = [k.name for k in ks if "fp32" in k.precisions]
        if names:
            out.append((CLASS_NAMES[group], names, ["fp32"]))
    # cuBLAS alone does not bring a precision in: its tf32 row is a baseline for the group's own.
    others = [p for p in allowed if p != "fp32"
              and any(p in k.precisions for k in ks if k.family != "cublas")]
    names = [k.name for k in ks if any(p in k.precisions for p in others)]
    if others and names:
        out.append((CLASS_NAMES[group] + TENSOR_CORE_SUFFIX, names, others))
    return out


def sweep_shapes() -> list[tuple[int, int, int]]:
    return [tuple(int(d) for d in s) for s in shape_catalogue.shape_set("asv")]


def sweep_shape_texts() -> list[str]:
    return [shape_text(s) for s in sweep_shapes()]


def sweep_kernels(family: str) -> list[str]:
    """The family's general-purpose kernel: its stage-11 stream-K kernel (deterministic variant),
    the last rung of the ladder, which chooses its tile and decomposition per shape."""
    ks = [k.name for k in registry.kernels()
          if k.family == family and k.stage == "stream_k" and k.variant != "atomic"]
    return ks[:1]


def ladder_params(group: str, tensor_core: bool = False) -> list:
    """[kernels, shapes, precisions] of a group's time class: its fp32 ladder (cuBLAS included) or,
    with ``tensor_core``, its other precisions (``suites``); empty lists where it has none."""
    name = CLASS_NAMES[group] + (TENSOR_CORE_SUFFIX if tensor_core else "")
    for suite, kernel_names, precs in suites(group):
        if suite == name:
            return [kernel_names, shapes(group), precs]
    return [[], shapes(group), []]


def pct_params(group: str, tensor_core: bool = False) -> list:
    """[kernels, precisions] of a % of cuBLAS class: its time twin's kernels but cuBLAS."""
    kernel_names, _, precs = ladder_params(group, tensor_core)
    return [[k for k in kernel_names if registry.get(k).family != "cublas"], precs]


def sweep_params(family: str) -> list:
    """[kernels, precisions] of a family's sweep class: its general-purpose kernel, at every
    allowed precision it has."""
    ks = sweep_kernels(family)
    return [ks, [p for p in precisions() if any(p in registry.get(k).precisions for k in ks)]]


def sweep_version() -> str:
    # A different shape set is a different measurement: asv keeps history per version.
    return f"{VERSION}-{digest(sweep_shape_texts())}"


def skinny_shapes() -> list[str]:
    return [shape_text(s) for s in shape_catalogue.shape_set(SKINNY_SET)]


def skinny_kernels() -> list[str]:
    """The general-purpose kernels the skinny classes track, in ladder order: each family's
    stream-K kernel (``sweep_kernels``) and the CUDA family's top tensor-core rung (the last
    registered CUDA stage without an fp32 path), since stage 11 has no tensor-core path."""
    tensor_core = [k.name for k in registry.kernels()
                   if k.family == "cuda" and "fp32" not in k.precisions and k.variant != "atomic"]
    names = set(sweep_kernels("cuda") + sweep_kernels("triton") + tensor_core[-1:])
    return [k.name for k in registry.kernels() if k.name in names]


def skinny_params(tensor_core: bool = False, cublas: bool = False) -> list:
    """[kernels, shapes, precisions] of a skinny class: ``skinny_kernels`` at fp32 or, with
    ``tensor_core``, at tf32 / tf32x3 (each kernel that has one of them); cuBLAS first with
    ``cublas`` (the GB/s classes: its bandwidth is the reference). Empty lists in the quick set,
    which records the committed history: these points cost a measuring process it doesn't have."""
    if bench_set() == "quick":
        return [[], [], []]
    precs = [p for p in precisions() if (p != "fp32") == tensor_core]
    names = [k for k in skinny_kernels() if any(p in registry.get(k).precisions for p in precs)]
    if cublas and names:
        names = ["cublas"] + names
    return [names, skinny_shapes(), precs if names else []]


def skinny_version() -> str:
    # A different shape set is a different measurement: asv keeps history per version.
    return f"{VERSION}-{digest(skinny_shapes())}"
