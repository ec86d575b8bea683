"""``--variant KERNEL[:NAME=VALUE,...]``: one kernel run several times, once per set of its options.

A variant is a kernel with some of its declared options fixed (the options ``--list`` shows and
``--opt`` takes). It joins the run as one more kernel of the selection, so it goes through the
same checks, engine, cuBLAS baseline, row schema and formats as every other row; its rows'
``kernel`` is the variant's label, e.g. ``triton.stream_k[grid=264]`` (``KERNEL`` alone is the
kernel as its heuristic configures it, labelled with its plain name), and the sweep summary has
one line per label.

Grid syntax (the one way to ask for several variants in one flag):

* ``NAME=V1|V2|V3`` one variant per value;
* ``NAME=*`` one variant per value the option declares (``Option.candidates`` or
  ``Option.choices``: a CUDA stage's compiled tiles, a Triton kernel's autotune configs, a Triton
  option's choices); an option that declares none is refused;
* several ``NAME=...`` items separated by ``,`` give the cross product, in the order written:
  ``cuda.10_split_k:tile=*,split_k=1|2|4`` is every compiled tile times three split counts.

Everything is parsed and every value checked by the kernel's own option parser before any GPU
work; a malformed or unknown option is a ``UsageError`` naming the ``--variant`` text.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Iterable

from .errors import UsageError
from .registry import Kernel, declared_candidates

GRID_SEPARATOR = "|"
ALL_CHOICES = "*"


def parse(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """``KERNEL[:NAME=V1|V2,NAME=*...]`` -> (kernel name, [(option, [value texts or '*'])])."""
    name, _, rest = text.strip().partition(":")
    name = name.strip()
    if not name:
        raise UsageError(f"--variant {text!r}: no kernel name (KERNEL[:NAME=VALUE,...])")
    items: list[tuple[str, list[str]]] = []
    for item in (x.strip() for x in rest.split(",") if x.strip()):
        key, eq, value = item.partition("=")
        key = key.strip()
        values = [v.strip() for v in value.split(GRID_SEPARATOR)]
        if not eq or not key or not all(values):
            raise UsageError(f"--variant {text!r}: {item!r} is not NAME=VALUE (or NAME=V1|V2, NAME=*)")
        if key in (k for k, _ in items):
            raise UsageError(f"--variant {text!r}: option {key!r} given twice")
        if ALL_CHOICES in values and len(values) > 1:
            raise UsageError(f"--variant {text!r}: {key}=* already means every declared value")
        items.append((key, values))
    return name, items


def label(name: str, raw: dict) -> str:
    """The rows' kernel column: the name, with the options it fixes in brackets."""
    return name if not raw else name + "[" + ",".join(f"{k}={v}" for k, v in raw.items()) + "]"


def expand(kernel: Kernel, text: str, items: list[tuple[str, list[str]]]) -> list[dict]:
    """The cross product of the option grid: one ``{option: value text}`` per variant."""
    axes = []
    for key, values in items:
        if values == [ALL_CHOICES]:
            opt = next((o for o in kernel.options if o.name == key), None)
            if opt is None:     # parse_options below names the options the kernel has
                kernel.parse_options({key: ""})
            values = list(declared_candidates(opt))
            if not values:
                raise UsageError(f"--variant {text!r}: option {key!r} of {kernel.name} declares no list of "
                                 f"values to expand {key}=* over; give them as {key}=V1|V2")
        axes.append([(key, v) for v in values])
    return [dict(combo) for combo in itertools.product(*axes)]


def variant_kernel(kernel: Kernel, raw: dict, parsed: dict) -> Kernel:
    """``kernel`` with ``parsed`` options fixed: a Kernel named by its label whose prepare passes
    them on. The fixed options are no longer settable with --opt (they are the variant)."""
    if not raw:
        return kernel
    base_prepare = kernel.prepare

    def prepare(problem, inputs, options):
        return base_prepare(problem, inputs, {**(options or {}), **parsed})

    rest = tuple(o for o in kernel.options if o.name not in parsed)
    return dataclasses.replace(kernel, name=label(kernel.name, raw), prepare=prepare, options=rest,
                               variant_of=(kernel.name, dict(raw)))


def resolve(texts: Iterable[str], known: dict) -> list[tuple[Kernel, Kernel]]:
    """Each ``--variant`` text -> [(registered kernel, variant kernel)], grids expanded, in order.
    ``known`` maps kernel names to the kernels the variant may name. Unknown kernels, cuBLAS, bad
    options or values and duplicates are usage errors, raised before any GPU work."""
    out, seen = [], set()
    for text in texts:
        name, items = parse(text)
        kernel = known.get(name)
        if kernel is None:
            raise UsageError(f"--variant {text!r}: unknown kernel {name!r}; known: {', '.join(sorted(known))}")
        if kernel.family == "cublas":
            raise UsageError(f"--variant {text!r}: cuBLAS is the baseline of every shape already")
        for raw in expand(kernel, text, items):
            try:
                parsed = kernel.parse_options(raw)
            except UsageError as e:
                raise UsageError(f"--variant {text!r}: {e}") from None
            v = variant_kernel(kernel, raw, parsed)
            if v.name in seen:
                raise UsageError(f"--variant {text!r}: variant {v.name} given twice")
            seen.add(v.name)
            out.append((kernel, v))
    return out


def wire_name(kernel: Kernel) -> tuple:
    """How a kernel travels to another process (compare.harness.worker, a Dask worker): its name,
    and for a variant the base kernel and the option texts it fixes."""
    return (kernel.name, kernel.variant_of)


def from_wire(wire: tuple) -> Kernel:
    """The kernel ``wire_name`` described, rebuilt in this process from the registry."""
    from . import registry
    name, variant_of = wire
    if not variant_of:
        return registry.get(name)
    base = registry.get(variant_of[0])
    return variant_kernel(base, variant_of[1], base.parse_options(variant_of[1]))
