"""The one list of kernels.

Every kernel is declared once, here or in its family module through :func:`register`. The CLI,
the asv suite, the tests and the docs all read :func:`kernels`; nothing else lists kernels.

The stage ladder follows the seed worklogs' story. Each stage belongs to a *group*; a group is
what a Triton kernel is the counterpart of (Triton hides the steps between "tiled" and
"warptile" inside its compiler), and cuBLAS is the baseline of every group.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import plugins
from .errors import UsageError
# Option and the renamed-spelling table live in options.py; re-exported here, where kernels are declared.
from .options import (OPTION_KINDS, RENAMED, Option, OptionValueError, declared_candidates,  # noqa: F401
                      declared_choices, renamed_message)
from .problem import PRECISIONS, Problem

GROUPS = ("naive", "tiled", "split_k")
# "plugin": a kernel of your own, declared in a file outside the suite (compare/harness/plugins.py).
FAMILIES = ("cublas", "cuda", "triton", "plugin")


@dataclass(frozen=True)
class Claim:
    """What a stage's header says it improves, as a test on Nsight Compute's counters
    (compare/outputs/profile_counters.py evaluates it): ``metric`` of ``stage`` compared (``op``:
    "<" or ">") with the same metric of stage ``than`` on the same problem, or, when ``limit`` is
    set, at most ``limit`` ("~0": a conflict-free kernel still shows a stray replay now and then,
    so zero is read as under 1% of the wavefronts), or, when ``at_least`` is set, at least that (a
    stage whose precision no earlier stage has: the tensor-core stages run tf32, the FFMA ladder
    fp32, so there is no same-problem row to beat)."""
    stage: str
    metric: str
    op: str
    says: str
    than: str = ""
    limit: Optional[float] = None
    at_least: Optional[float] = None


@dataclass(frozen=True)
class Stage:
    number: int          # position in the story; Triton stages borrow the number of their group's start
    name: str
    group: str
    idea: str
    claims: tuple = ()   # Claim rows: what --profile checks this stage improves


# The ladder: the one description of every stage (a family's kernels name their stage; number,
# group and idea come from here), filled as the families load: each declares its stages with
# declare_stage (the CUDA ladder beside its StageSpecs in cuda_kernels/registry.py, numbered like
# its NN_*.cu; then the Triton-only stages; then a plugin's). Read it through stages() / stage().
STAGES: list[Stage] = []
STAGE_BY_NAME: dict[str, Stage] = {}


def declare_stage(stage: Stage) -> Stage:
    """Add a stage to the ladder (idempotent for an identical declaration)."""
    for c in stage.claims:
        if c.stage != stage.name:
            raise ValueError(f"stage {stage.name!r}: a claim names stage {c.stage!r}")
    if stage.group not in GROUPS:
        raise ValueError(f"stage {stage.name!r}: unknown group {stage.group!r}; known: {', '.join(GROUPS)}")
    old = STAGE_BY_NAME.get(stage.name)
    if old is not None:
        if old != stage:
            raise ValueError(f"stage {stage.name!r} declared twice, differently: {old} vs {stage}")
        return old
    STAGES.append(stage)
    STAGE_BY_NAME[stage.name] = stage
    return stage


BASELINE_STAGE = "cublas"


def stages() -> list[Stage]:
    """Every stage of the ladder, in order (the families loaded first: they declare them)."""
    _load_families()
    return list(STAGES)


def stage(name: str) -> Stage:
    """The stage called ``name`` (KeyError for none), the families loaded first where needed."""
    if name not in STAGE_BY_NAME:
        _load_families()
    return STAGE_BY_NAME[name]


@dataclass(frozen=True)
class Kernel:
    """One row of the comparison.

    ``prepare(problem, inputs, options)`` compiles / autotunes and returns ``launch``: a
    zero-argument callable that enqueues ``C = alpha*A@B + beta*C`` (in place, BLAS semantics;
    with beta == 0 C must not be read) on torch's current CUDA stream and returns without
    synchronizing. ``options`` maps option names (declared in ``options``) to parsed values the
    user chose; the kernel picks the rest itself. ``launch.config`` (a dict attribute of the
    returned callable) holds the resolved configuration: every knob's value, whether chosen by the
    kernel's heuristic, an autotuner or the user. The runner reads it after the first launch, so an
    autotuner may fill it in then. ``prepare`` may write C; the harness resets C before every
    checked or timed run.
    ``supports(problem)`` returns None or the reason, in words, that the kernel can't take it.
    """

    name: str
    family: str
    stage: str
    precisions: tuple[str, ...]
    prepare: Callable
    idea: str = ""
    supports: Optional[Callable[[Problem], Optional[str]]] = None
    variant: str = ""
    # Runs under TRITON_INTERPRET=1 on CPU tensors (correctness only).
    interpretable: bool = False
    # The knobs a user may set with --opt; everything else about the kernel is fixed.
    options: tuple = ()
    # Descriptive facts for --list and docs (config counts, operand layouts); never read to run.
    meta: dict = field(default_factory=dict, compare=False, hash=False)
    # A --variant (compare/harness/variants.py): the registered kernel and the option texts it
    # fixes, so another process (the worker, a Dask worker) can build the same kernel.
    variant_of: Optional[tuple] = field(default=None, compare=False, hash=False)

    def parse_options(self, raw: dict) -> dict:
        """``{name: text}`` -> ``{name: value}``; a UsageError names an unknown option or bad value."""
        known = {o.name: o for o in self.options}
        out = {}
        for name, text in raw.items():
            renamed = renamed_message(name, text, self.options)
            if renamed:
                raise UsageError(f"{self.name}: {renamed}")
            if name not in known:
                have = ", ".join(sorted(known)) or "none"
                raise UsageError(f"{self.name} has no option {name!r} (its options: {have})")
            try:
                out[name] = known[name].value(text)
            except OptionValueError as e:
                raise UsageError(f"{self.name}: {e}") from None
            except (ValueError, TypeError) as e:
                raise UsageError(f"{self.name}: bad value {text!r} for option {name!r}: {e}") from None
        return out

    @property
    def group(self) -> str:
        return "all" if self.stage == BASELINE_STAGE else stage(self.stage).group

    @property
    def number(self) -> int:
        return 0 if self.stage == BASELINE_STAGE else stage(self.stage).number

    def why_not(self, problem: Problem) -> Optional[str]:
        if problem.precision not in self.precisions:
            return f"no {problem.precision} path (has {', '.join(self.precisions)})"
        return self.supports(problem) if self.supports else None


_REGISTRY: dict[str, Kernel] = {}
_FAMILY_MODULES = ("compare.families.cublas", "cuda_kernels", "triton_kernels")
_loaded = False
LOAD_ERRORS: dict[str, str] = {}


def register(kernel: Kernel) -> Kernel:
    if kernel.family not in FAMILIES:
        raise ValueError(f"kernel {kernel.name!r}: unknown family {kernel.family!r}; known: {FAMILIES}")
    if kernel.stage != BASELINE_STAGE and kernel.stage not in STAGE_BY_NAME:
        _load_families()    # a plugin registering before the families declared the ladder
    if kernel.stage != BASELINE_STAGE and kernel.stage not in STAGE_BY_NAME:
        raise ValueError(f"kernel {kernel.name!r}: unknown stage {kernel.stage!r}")
    bad = set(kernel.precisions) - set(PRECISIONS)
    if bad:
        raise ValueError(f"kernel {kernel.name!r}: unknown precisions {sorted(bad)}")
    if kernel.name in _REGISTRY and _REGISTRY[kernel.name] is not kernel:
        raise ValueError(f"kernel {kernel.name!r} registered twice")
    _REGISTRY[kernel.name] = kernel
    return kernel


def _load_families() -> None:
    """The families, then the installed plugins (entry points of plugins.ENTRY_POINT_GROUP)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _FAMILY_MODULES:
        try:
            importlib.import_module(mod)
        except Exception as exc:  # one broken family must not hide the others' results
            LOAD_ERRORS[mod] = f"{type(exc).__name__}: {exc}"
            print(f"warning: could not load kernel family {mod}: {LOAD_ERRORS[mod]}", file=sys.stderr)
    for ep in plugins.entry_points():
        where = f"plugin {ep.name} = {ep.value} (entry point of {plugins.ENTRY_POINT_GROUP})"
        try:
            ep.load()
        except Exception as exc:  # a broken installed plugin must not hide the ladder either
            LOAD_ERRORS[where] = f"{type(exc).__name__}: {exc}"
            print(f"warning: could not load {where}: {LOAD_ERRORS[where]}", file=sys.stderr)


_PLUGINS: dict[str, list[str]] = {}   # --plugin spec as given -> the kernels it registered
_BY_MODULE: dict[str, list[str]] = {}  # module name -> the same (one file given two ways)


def load_plugins(specs: Optional[list]) -> None:
    """Import each plugin (``--plugin``: a module name or a path to a .py file) after the families.
    A UsageError names a plugin that fails to import, that the registry refuses, or that
    declares no kernel. Loading one spec twice is a no-op."""
    _load_families()
    for spec in specs or []:
        if spec in _PLUGINS:
            continue
        before = set(_REGISTRY)
        imported_already = not plugins.is_path(spec) and spec in sys.modules   # e.g. as an entry point
        module = plugins.import_plugin(spec)
        new = _BY_MODULE.setdefault(module.__name__, sorted(set(_REGISTRY) - before))
        if not new and not imported_already:
            raise UsageError(f"--plugin {spec}: declares no kernel (a plugin calls "
                             f"compare.harness.registry.register or a compare.families.plugin helper)")
        _PLUGINS[spec] = new


def loaded_plugins() -> list[str]:
    """The ``--plugin`` specs loaded in this process, as given (a worker process re-loads these;
    installed entry points load by themselves)."""
    return list(_PLUGINS)


def plugin_kernels() -> dict[str, list[str]]:
    """{--plugin spec: the kernel names it registered}."""
    return {k: list(v) for k, v in _PLUGINS.items()}


def kernels() -> list[Kernel]:
    """Every registered kernel in ladder order: cuBLAS, then by stage number, CUDA before Triton."""
    _load_families()
    fam_order = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(_REGISTRY.values(), key=lambda k: (k.number, fam_order[k.family], k.name))


def get(name: str) -> Kernel:
    _load_families()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def options_of(name: str) -> tuple:
    """The options kernel ``name`` declares; () for a kernel not registered here."""
    try:
        return get(name).options
    except KeyError:
        return ()


def stage_choices() -> list[str]:
    return ["all", *GROUPS, *[s.name for s in stages() if s.name not in GROUPS]]


def select(stage: str = "all", families: Optional[list[str]] = None) -> list[Kernel]:
    """Kernels a ``--stage`` selection shows.

    * ``all``: everything.
    * a group (naive, tiled, split_k): every stage of that group in every family, plus cuBLAS.
    * a CUDA stage (e.g. vectorized): that stage, the Triton kernels of its group, plus cuBLAS.
    * a Triton stage (naive_blocked): itself plus cuBLAS.
    """
    if stage not in stage_choices():
        raise ValueError(f"unknown stage {stage!r}; valid: {', '.join(stage_choices())}")
    if families:
        bad = [f for f in families if f not in FAMILIES]
        if bad:
            raise ValueError(f"unknown family {bad[0]!r}; valid: {', '.join(FAMILIES)}")
    keep = set(families or FAMILIES) | {"cublas"}  # cuBLAS is every comparison's baseline
    return [k for k in kernels() if k.family in keep and _shows(k, stage)]


def _shows(k: Kernel, stage: str) -> bool:
    if stage == "all" or k.stage == BASELINE_STAGE:
        return True
    if stage in GROUPS:
        return k.group == stage
    if k.stage == stage:
        return True
    st = STAGE_BY_NAME[stage]     # select() checked it against stage_choices()
    # A CUDA-only stage is shown next to the Triton kernels of its group (its counterparts); a
    # stage Triton implements too shows the Triton kernels of that stage only.
    triton_stages = {x.stage for x in _REGISTRY.values() if x.family == "triton"}
    return k.family == "triton" and stage not in triton_stages and k.group == st.group


def opt_flags(texts: Optional[list], selected: list) -> dict:
    """``--opt [KERNEL:]NAME=VALUE`` flags -> {kernel name: {option: text}} over the ``selected``
    kernels (the CLI and the profiler take the same flags). An option without a kernel goes to
    every selected kernel that declares it. A UsageError names a malformed flag, an unknown or
    unselected kernel, or an option no selected kernel has; values are parsed by
    ``Kernel.parse_options``."""
    raw: dict = {}
    by_name = {k.name: k for k in selected}
    for text in texts or []:
        lhs, eq, value = text.partition("=")
        kname, colon, name = lhs.strip().rpartition(":")
        name = name.strip()
        if not eq or not name:
            raise UsageError(f"--opt {text!r}: write [KERNEL:]NAME=VALUE, e.g. --opt split_k=8")
        if colon:
            if kname not in by_name:
                known = {k.name for k in kernels()}
                if kname not in known:
                    raise UsageError(f"--opt {text!r}: unknown kernel {kname!r}")
                raise UsageError(f"--opt {text!r}: kernel {kname} is not selected in this run")
            targets = [by_name[kname]]
        else:
            targets = [k for k in selected if any(o.name == name for o in k.options)]
            # an old spelling: of a name no selected kernel has, or of a value a target's option had
            for k in targets or selected:
                renamed = renamed_message(name, value, k.options)
                if renamed:
                    raise UsageError(f"--opt {text!r}: {renamed}" + (f" ({k.name})" if targets else ""))
            meanings = {declared_choices(next(o for o in k.options if o.name == name)) for k in targets}
            if len(meanings) > 1:
                raise UsageError(f"--opt {text!r}: {name} means different things to "
                                 f"{', '.join(k.name for k in targets)} (their values differ); "
                                 f"name the kernel: --opt KERNEL:{name}={value.strip()}")
            if not targets:
                import difflib    # 1 ms, for this message only (--help starts without it)
                have = sorted({o.name for k in selected for o in k.options})
                near = difflib.get_close_matches(name, have, n=3) or have[:3]
                more = f" (of {len(have)}; --list shows every kernel's)" if len(have) > len(near) else ""
                raise UsageError(f"--opt {text!r}: no selected kernel has an option {name!r}; "
                                 f"{'e.g. ' + ', '.join(near) + more if have else 'the selected kernels have none'}")
        for k in targets:
            raw.setdefault(k.name, {})[name] = value
    return raw
