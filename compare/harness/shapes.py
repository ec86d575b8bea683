"""Named sets of GEMM shapes for sweeps, and the reader for a user's own list of shapes.

One place defines every set (``SETS``); ``SHAPE_SETS`` and ``SHAPE_SET_DOCS`` are views of it.
A shape is ``(M, N, K)``: C[M, N] = A[M, K] @ B[K, N].

Every shape is at least 1 GFLOP (2*M*N*K >= 1e9) so that it takes long enough on a modern GPU
for the timing engine to see the kernel rather than the launch; no set needs an exception today.
That rule is why 512^3 (0.27 GFLOP) is not in ``square`` and why single-token decode (M = 1 with
a 4096-wide layer, 0.03 GFLOP) is not in ``llm``: it is a GEMV, whose only >= 1 GFLOP form here
is ``skinny``'s 1x65536x8192. The exceptions are the bandwidth-bound sets (``bandwidth_bound``),
whose products stream one operand at <= 4 flops per byte, and the small ones (``small``), where
fixed costs dominate: their size is counted in bytes, at least ``MIN_BYTES`` of operands (about
1.3 us at an H100's 3.35 TB/s, the small end of the class).

``heldout`` is for judging tuned defaults only: no tuning, default choice or heuristic may be
fitted on it, or it stops telling whether the defaults generalise.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

from .errors import UsageError
from .problem import ProblemError, parse_shape

Shape = tuple[int, int, int]

# The least work a set's shape may have (2*M*N*K), see the module docstring.
MIN_FLOPS = 1e9
# ... or, in a bandwidth-bound set, the least operand bytes (4 * (M*K + K*N)): 2^20 floats.
MIN_BYTES = 4 * 2**20


@dataclass(frozen=True)
class ShapeSet:
    name: str
    doc: str
    shapes: tuple[Shape, ...]
    # False for heldout: a set that tuning must never look at.
    tunable: bool = True
    # Shapes sized by bytes moved (MIN_BYTES), not flops (MIN_FLOPS): see the module docstring.
    bandwidth_bound: bool = False
    # Small problems, where fixed costs (launch, copies, fixup) dominate: also sized by bytes.
    small: bool = False


def _cubes(*sizes: int) -> tuple[Shape, ...]:
    return tuple((n, n, n) for n in sizes)


_SQUARE = ShapeSet(
    "square",
    "cubes from 1000 to 8192, powers of two and not (512^3 is left out: 0.27 GFLOP)",
    _cubes(1000, 1024, 1536, 2000, 2048, 3000, 4096, 5000, 6144, 8192),
)

_ODD = ShapeSet(
    "odd",
    "no dimension a multiple of 4 (so none of 8 or 16): primes and 2-mod-4 sizes; every tail path",
    ((1021, 1021, 1021), (2039, 2039, 2039), (3001, 2999, 3003), (4093, 4093, 4093),
     (1999, 4091, 1031), (5003, 1021, 2039), (127, 8191, 1021), (2050, 1030, 3002)),
)

# (M tokens, N out features, K in features) of Llama-2 7B/13B (4096/11008, 5120/13824), Mistral 7B /
# Llama-3 8B (4096/14336) and Llama-2/3 70B (8192/28672) layers: decode batches (M 16..64) and
# prefill (M 128..8192). M = 16 is used only where the layer makes it >= 1 GFLOP.
_LLM = ShapeSet(
    "llm",
    "transformer layer GEMMs (tokens x out x in) of 7B-70B models, decode batches and prefill",
    ((16, 11008, 4096), (16, 4096, 11008), (32, 4096, 4096), (64, 8192, 28672),
     (128, 4096, 11008), (512, 12288, 4096), (1024, 13824, 5120), (1024, 5120, 13824),
     (2048, 11008, 4096), (2048, 4096, 11008), (512, 28672, 8192), (4096, 14336, 4096),
     (4096, 4096, 14336), (8192, 4096, 4096)),
)

_SKINNY = ShapeSet(
    "skinny",
    "M or N <= 64 (GEMV-like, a few rows or columns): too few output tiles to fill the GPU",
    ((1, 65536, 8192), (8, 32768, 8192), (16, 8192, 8192), (32, 16384, 4096), (48, 12288, 4096),
     (64, 4096, 65536), (4096, 64, 4096), (8192, 16, 8192), (16384, 32, 2048)),
)

_LONG_K = ShapeSet(
    "long_k",
    "K >= 16*max(M, N): few output tiles, long reductions (the split-K regime)",
    ((128, 128, 262144), (256, 256, 131072), (257, 255, 65537), (256, 512, 131072),
     (384, 384, 65536), (512, 512, 65536), (1000, 1000, 20000), (1024, 1024, 16384),
     (64, 64, 1048576)),
)

# One or two shapes per set, small enough that every kernel's point takes seconds on an H100:
# the asv geomean benchmark measures this set on every commit it records. 257x255x65537 is there
# because neither operand's rows are 16-byte aligned: the Triton family's worst sweep shape
# (results/h100/sweep/), which history would otherwise never see.
_ASV = ShapeSet(
    "asv",
    "small mixed set for the asv geomean benchmark: one or two shapes from each set",
    ((2048, 2048, 2048), (3001, 2999, 3003), (512, 12288, 4096), (32, 16384, 4096),
     (256, 256, 131072), (1024, 1024, 16384), (257, 255, 65537)),
)

# One shape per class where a GEMM stops being a tile problem, for the asv benchmarks that track
# them over commits (benchmarks/gemm.py, the Skinny* classes): a matrix times 8 vectors (N <= 8,
# M*K = 64M floats), one row (M = 1, K*N = 32M), a small problem (K <= 2048, M*N = 1.5M) and a tiny
# output with a long K (M*N = 3072). None is in a held-out set, so the held-out sets stay unseen by
# anyone who tunes against this history; chosen without measuring. Sized by bytes as
# heldout_skinny is: the one row and the tiny output are below MIN_FLOPS.
_ASV_SKINNY = ShapeSet(
    "asv_skinny",
    "asv: one shape per bandwidth-bound or small class (N <= 8, M = 1, small K, tiny output), sized by bytes",
    ((16384, 8, 4096), (1, 8192, 4096), (1536, 1024, 768), (48, 64, 65536)),
    bandwidth_bound=True,
)

_HELDOUT = ShapeSet(
    "heldout",
    "a mix in no other set, for judging tuned defaults; tuning must never use it",
    ((1800, 1800, 1800), (3072, 1536, 2560), (1537, 2049, 1023), (24, 14336, 4096),
     (96, 5120, 13824), (320, 320, 81920), (6000, 1000, 3000), (4097, 4095, 255)),
    tunable=False,
)

# The three classes where the general kernels fell furthest behind cuBLAS on an outside user's
# shapes: single-row products, tiny outputs with very long K, and 256-1024-row
# projections with K >= 8192. Fixed on 2026-11-25 before any kernel was tuned for these classes
# and chosen without measuring them; like ``heldout``, tuning must never use them (tune on
# generated shapes of the same classes instead), or they stop telling whether a fix generalises.
_HELDOUT_M1 = ShapeSet(
    "heldout_m1",
    "held out: single-row products (M = 1, GEMV-like, >= 1 GFLOP); tuning must never use it",
    ((1, 32768, 16384), (1, 20480, 28672), (1, 49152, 12288), (1, 131072, 4096), (1, 36864, 14336)),
    tunable=False,
)
_HELDOUT_TINY_OUT = ShapeSet(
    "heldout_tiny_out",
    "held out: 16-48 rows and columns, K >= 262144 (tiny output, very long K); tuning must never use it",
    ((32, 32, 524288), (16, 48, 655360), (48, 48, 262144), (40, 24, 540000), (17, 45, 786432), (33, 29, 600000)),
    tunable=False,
)
_HELDOUT_LLM_K8K = ShapeSet(
    "heldout_llm_k8k",
    "held out: 256-1024-row LLM projections with K >= 8192; tuning must never use it",
    ((256, 4096, 11008), (384, 5120, 13824), (512, 8192, 28672), (768, 1536, 8960), (1000, 3072, 8192),
     (640, 4096, 14336), (300, 8192, 28672), (1024, 2560, 9728)),
    tunable=False,
)
# A second LLM set, fixed on 2026-11-25 (evening) before any rule about padded 128-row tiles was
# tried on it: down/gate projections of public models (Llama-2/3, Qwen2, Gemma) at token counts
# chosen without measuring, six of them just past a multiple of 128 rows.
_HELDOUT_LLM_PAD = ShapeSet(
    "heldout_llm_pad",
    "held out: 190-940-row LLM projections with K >= 8192, most just past a multiple of 128 rows; "
    "tuning must never use it",
    ((190, 4096, 14336), (420, 3584, 18944), (550, 8192, 28672), (680, 3072, 24576), (810, 5120, 13824),
     (940, 4096, 11008), (330, 28672, 8192), (460, 8192, 8192)),
    tunable=False,
)
# The bandwidth-bound classes: a matrix times 1-8 vectors (N <= 8; 20 shapes, M*K from 1M to
# 256M floats) and single rows (M = 1; 10 shapes, K*N from 1M to 256M). Fixed on 2026-11-27 before
# stage 11's gemv / skinny_n paths were run on a GPU, chosen without measuring anything: model
# layer sizes (4096, 11008, 14336, 28672, 50257), primes and odd sizes for the tails, very short
# and very long K. Like ``heldout``, tuning must never use them.
_HELDOUT_SKINNY = ShapeSet(
    "heldout_skinny",
    "held out: a matrix times 1-8 vectors (N <= 8) and single rows (M = 1), sized by bytes "
    "(1M-256M floats streamed); tuning must never use it",
    ((1024, 8, 1024), (4096, 1, 512), (1000, 3, 3000), (2048, 2, 2048), (8191, 5, 1021), (128, 4, 65536),
     (16384, 8, 1024), (4096, 6, 4096), (32, 8, 524288), (11008, 4, 4096), (4096, 7, 11008), (131072, 8, 256),
     (14336, 2, 4096), (5120, 1, 13824), (100003, 3, 1000), (8192, 8, 14336), (28672, 5, 4096),
     (1000000, 2, 100), (16384, 4, 16384), (65536, 1, 4095),
     (1, 1024, 1024), (1, 2048, 2047), (1, 4096, 1000), (1, 3000, 3001), (1, 128, 131072), (1, 11008, 4096),
     (1, 4096, 11008), (1, 8193, 8191), (1, 65536, 1024), (1, 50257, 4096)),
    tunable=False, bandwidth_bound=True,
)
# heldout_skinny's tunable counterpart: the same two classes (N <= 8 with short and long K, M = 1),
# none of its shapes, for choosing the bandwidth-bound paths' rules and defaults; heldout_skinny
# then judges them. Chosen on 2026-11-27 without measuring anything (four of them are the short-K
# shapes reproduce/measure-skinny-short timed first).
_TUNE_SKINNY = ShapeSet(
    "tune_skinny",
    "tunable: a matrix times 1-8 vectors (N <= 8) and single rows (M = 1), sized by bytes, none held out",
    ((2048, 8, 2048), (8192, 4, 8192), (65536, 2, 1024), (4000, 5, 6000), (262144, 8, 128), (32768, 1, 2048),
     (500, 6, 40000), (12288, 3, 12288), (200000, 4, 200), (100003, 3, 33), (32768, 8, 128), (65536, 1, 256),
     (1, 3072, 3072), (1, 5120, 5120), (1, 256, 65536), (1, 14336, 4096), (1, 4096, 14336), (1, 2000, 7000),
     (1, 7168, 2048), (1, 512, 32768), (1, 6144, 6144), (1, 1536, 12288)),
    bandwidth_bound=True,
)
# The small classes: small and mid problems (K <= 2048, M*N from 4097 to 8M: fixed costs, not the
# tensor cores, dominate) and tiny outputs (M*N <= 4096, K >= 16 max(M, N)). Fixed on 2026-11-28
# before any rule for these classes was tried, chosen without measuring anything: model widths
# (768-4096), a 1920x1080 frame, primes and odd sizes for every tail, K from 72 to 2048, and tiny
# outputs of sizes heldout_tiny_out lacks (64 rows or columns, 8-20 by 100-500). Sized by bytes
# (many are under 1 GFLOP). Like ``heldout``, tuning must never use it.
_HELDOUT_SMALL = ShapeSet(
    "heldout_small",
    "held out: small and mid problems (K <= 2048, M*N <= 8M) and tiny outputs (M*N <= 4096, long K), "
    "sized by bytes; tuning must never use it",
    ((800, 800, 800), (1280, 1280, 1280), (1111, 2222, 333), (2048, 512, 2048), (512, 2048, 2000),
     (3584, 1024, 896), (1920, 1080, 512), (2000, 4000, 1000), (4096, 2048, 2048), (640, 1280, 1536),
     (300, 3000, 1500), (1500, 300, 1900), (2304, 768, 768), (999, 999, 999), (15000, 500, 72),
     (6144, 1024, 1200), (256, 256, 2048), (128, 6000, 1800), (5000, 128, 2000), (1792, 1792, 1792),
     (1000, 7000, 1024), (2500, 3000, 500), (700, 900, 1100), (3333, 1111, 777),
     (64, 64, 65536), (20, 100, 300000), (50, 80, 200000), (64, 32, 400000), (24, 160, 250000),
     (12, 300, 150000)),
    tunable=False, small=True,
)
# heldout_small's tunable counterpart: the same two classes, none of its shapes, for choosing the
# small classes' rules; heldout_small then judges them. Chosen on 2026-11-28 without measuring.
_TUNE_SMALL = ShapeSet(
    "tune_small",
    "tunable: small and mid problems (K <= 2048, M*N <= 8M) and tiny outputs (M*N <= 4096, long K), "
    "sized by bytes, none held out",
    ((768, 768, 768), (1024, 1024, 1024), (1024, 2048, 512), (2048, 1024, 2048), (512, 4096, 1024),
     (4096, 512, 1536), (4096, 1536, 256), (3000, 2000, 700), (640, 640, 2048), (6144, 1280, 160),
     (1000, 1000, 1000), (256, 8192, 2048), (8192, 256, 1024), (384, 384, 2048), (2560, 2560, 1024),
     (96, 4096, 2048), (4096, 96, 2048), (1200, 700, 1300),
     (64, 64, 131072), (32, 128, 65536), (60, 60, 100000), (128, 32, 200000), (16, 200, 120000)),
    small=True,
)
HELDOUT_SETS = ("heldout", "heldout_m1", "heldout_tiny_out", "heldout_llm_k8k", "heldout_llm_pad", "heldout_skinny",
                "heldout_small")

# The sets ``all`` is the union of, in this order.
ALL_PARTS = ("square", "odd", "llm", "skinny", "long_k")


def _union(sets: list[ShapeSet]) -> tuple[Shape, ...]:
    return tuple(dict.fromkeys(s for shape_set_ in sets for s in shape_set_.shapes))


_BASE = (_SQUARE, _ODD, _LLM, _SKINNY, _LONG_K, _ASV, _ASV_SKINNY, _HELDOUT, _HELDOUT_M1, _HELDOUT_TINY_OUT,
         _HELDOUT_LLM_K8K, _HELDOUT_LLM_PAD, _HELDOUT_SKINNY, _TUNE_SKINNY, _HELDOUT_SMALL, _TUNE_SMALL)
_ALL = ShapeSet(
    "all",
    "square + odd + llm + skinny + long_k, duplicates dropped, order kept",
    _union([s for s in _BASE if s.name in ALL_PARTS]),
)

SETS: dict[str, ShapeSet] = {s.name: s for s in (*_BASE, _ALL)}
SHAPE_SETS: dict[str, tuple[Shape, ...]] = {name: s.shapes for name, s in SETS.items()}
SHAPE_SET_DOCS: dict[str, str] = {name: s.doc for name, s in SETS.items()}


# --- per-group defaults: what a run uses when no shape is given -----------------------------
# Shapes as text ("1024" is a cube), keyed by the ladder's groups (compare.harness.registry.GROUPS).

# python -m compare without --shape/--sweep: the square and split-K shapes of the public anchors.
# Naive stages are slow, so small cubes; the tiled ladder from 1024 to 8192 plus one odd size that
# exercises every tail path; split-K where K is far larger than M and N, so that M*N alone has too
# few tiles to fill the GPU.
GROUP_DEFAULTS: dict[str, list[str]] = {
    "naive": ["256", "512", "1024"],
    "tiled": ["1024", "2048", "4096", "8192", "3001x2999x3003"],
    "split_k": ["256x256x131072", "512x512x65536", "1024x1024x16384"],
}
# python -m compare --interpret without --shape: small enough for the Triton interpreter on a CPU,
# yet each exercising what a kernel exists for: 77x65x300 has a tail on every edge (and runs
# split-K unsplit); 40x36x2000 is one output tile with a long K, so split-K splits it (3 ways on
# 132 SMs) and stream-K spreads its K iterations over several programs.
INTERPRET_DEFAULTS: list[str] = ["77x65x300", "40x36x2000"]
# python -m compare --profile without --shape: the ladder's profile size (results/profile/).
PROFILE_DEFAULT = "2048"
# The asv suite's per-group shapes (benchmarks/gemm.py), by GEMM_BENCH_SET; a changed shape is a
# new benchmark point, so these stay put while recorded history depends on them.
ASV_GROUP_SETS: dict[str, dict[str, tuple[str, ...]]] = {
    "quick": {"naive": ("512",), "tiled": ("1024",), "split_k": ("256x256x32768",)},
    "default": {"naive": ("512", "1024"), "tiled": ("1024", "4096"),
                "split_k": ("256x256x131072", "512x512x65536")},
    "full": {"naive": ("512", "1024"), "tiled": ("1024", "4096", "8192"),
             "split_k": ("256x256x131072", "512x512x65536")},
}


def flops(shape: Shape) -> int:
    M, N, K = shape
    return 2 * M * N * K


# Issue #43's small classes, as heldout_small and tune_small are drawn from them (their judges,
# reproduce/measure-heldout and reproduce/tf32_small_summary.py, read them here).
SMALL_CLASSES = ("small and mid", "tiny outputs")


def small_class(M: int, N: int, K: int) -> str:
    """"tiny outputs" (M*N <= 4096, K >= 16 max(M, N)), "small and mid" (K <= 2048,
    4096 < M*N <= 8M) or "" (neither)."""
    if M * N <= 4096 and K >= 16 * max(M, N):
        return "tiny outputs"
    if K <= 2048 and 4096 < M * N <= 8 * 2**20:
        return "small and mid"
    return ""


def shape_text(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


def shape_set(name: str) -> list[Shape]:
    """The shapes of the named set, in order; an unknown name is a UsageError listing the sets."""
    key = name.strip()
    if key not in SETS:
        raise UsageError(f"unknown shape set {name!r}; known sets: {', '.join(SETS)}")
    return list(SETS[key].shapes)


def describe() -> str:
    """One line per set: name, number of shapes, what it is for."""
    width = max(len(n) for n in SETS)
    return "\n".join(f"{n:<{width}}  {len(s.shapes):3d} shapes  {s.doc}" for n, s in SETS.items())


def sweep_shapes(set_names, shapes_file=None, distributions=None, interpret=False) -> list[Shape]:
    """The shapes of the named sets (comma-separable flag values), then of ``shapes_file``, then
    of each ``--distribution`` spec (compare.harness.distributions), in order, duplicates dropped;
    a sweep with no shape is a UsageError."""
    from .problem import split_flags
    out: list = []
    for name in split_flags(set_names):
        out += shape_set(name)
    if shapes_file:
        out += load_shapes_file(shapes_file)
    if distributions:
        for spec in distributions:
            out += distribution_shapes(spec, interpret=interpret)
    uniq = list(dict.fromkeys(tuple(s) for s in out))
    if not uniq:
        raise UsageError("the sweep has no shapes")
    return uniq


def load_shapes_file(path: str) -> list[Shape]:
    """A user's list of shapes, in file order.

    Either one shape per line, ``MxNxK`` or ``N`` for a cube, with ``#`` comments (whole line or
    trailing) and blank lines ignored; or CSV whose header names columns M, N and K (other
    columns are ignored, so a results CSV works). Any line that is not a shape is a UsageError
    naming ``file:line`` and the line's text; so are a missing or unreadable file and a file
    with no shapes."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise UsageError(f"shapes file {path}: cannot read it: {why}") from None

    shapes: list[Shape] = []
    columns = None   # CSV mode: index of M, N, K in a row
    for lineno, raw in enumerate(lines, 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        where = f"{path}:{lineno}: {raw.strip()!r}"
        if columns is None and not shapes and "," in text and not text.replace(",", "").replace(" ", "").isdigit():
            # A first line with commas and letters is a CSV header.
            names = [c.strip().lower() for c in next(csv.reader([text]))]
            missing = [c for c in ("m", "n", "k") if c not in names]
            if missing:
                raise UsageError(f"{where}: a CSV header must name columns M, N and K "
                                 f"(missing {', '.join(c.upper() for c in missing)})")
            columns = tuple(names.index(c) for c in ("m", "n", "k"))
            continue
        if columns is not None:
            shapes.append(_csv_row(text, columns, where))
            continue
        try:
            shapes.append(parse_shape(text))
        except ProblemError as e:
            raise UsageError(f"{where}: {e}") from None
    if not shapes:
        kind = "only a CSV header" if columns is not None else "no shapes (only blank lines and comments)"
        raise UsageError(f"shapes file {path} has {kind}")
    return shapes


def _csv_row(text: str, columns: tuple[int, int, int], where: str) -> Shape:
    cells = [c.strip() for c in next(csv.reader([text]))]
    if len(cells) <= max(columns):
        raise UsageError(f"{where}: {len(cells)} columns, the header has more")
    dims = []
    for name, i in zip("MNK", columns):
        cell = cells[i]
        if not (cell.isascii() and cell.isdigit()) or int(cell) < 1:
            raise UsageError(f"{where}: {name} must be an integer >= 1, got {cell!r}")
        dims.append(int(cell))
    return tuple(dims)


# ---- generated distributions ------------------------------------------------------------------
# --distribution NAME[:COUNT[:SEED]]: a reproducible corpus of COUNT distinct shapes drawn with
# random.Random(SEED), one shape after another, so a corpus's first n shapes are the n-shape corpus
# of the same seed (a sweep can be extended without re-measuring). Every shape obeys MIN_FLOPS and
# the upper bounds below; a draw that breaks one, or repeats a shape, is drawn again.

# Upper bound on one shape's work: 2 * 8192^3 (1.1 TFLOP, ~50 ms a launch for fp32 cuBLAS on an
# H100), so no generated shape costs more than the largest cube of the named sets.
MAX_FLOPS = 2 * 8192**3
# Upper bound on its memory: A, B and C together at most 3 * 8192^2 elements (0.8 GB in fp32, plus
# the float64 reference of C, 0.5 GB), so a shape fits beside cuBLAS's workspace on any 16 GB GPU.
MAX_OPERAND_ELEMENTS = 3 * 8192**2

# Osama, Merrill, Cecka, Garland, Owens, "Stream-K: Work-centric Parallel Decomposition for Dense
# Matrix-Matrix Multiplication on the GPU" (PPoPP 2023, arXiv 2301.03598): their corpus of 32,824
# GEMM shapes samples m, n and k log-uniformly from 128 to 8192 (their evaluation section).
LOGUNIFORM_RANGE = (128, 8192)

# (model, hidden width d, FFN width f); a layer's GEMMs are (tokens x out x in): the fused QKV
# projection (T, 3d, d), the attention output (T, d, d), FFN up/gate (T, f, d) and down (T, d, f).
LLM_MODELS = (
    ("llama2-7b", 4096, 11008), ("llama2-13b", 5120, 13824), ("llama3-8b", 4096, 14336),
    ("llama3-70b", 8192, 28672), ("qwen2-1.5b", 1536, 8960), ("phi3-mini", 3072, 8192),
)
# Tokens per GEMM, log-uniform over this range (any integer: continuous batching mixes decode
# batches of a few tokens with prefill chunks of thousands).
LLM_TOKENS = (16, 8192)

# Interpreter-only: the Triton interpreter runs a 64^3 GEMM in about a second on one CPU core, so
# a CPU test of the sweep machinery gets shapes of 8..48 per side, far below MIN_FLOPS; refused
# without --interpret (its timings would mean nothing on a GPU).
INTERPRET_TINY_RANGE = (8, 48)

DISTRIBUTIONS = {
    "loguniform": "M, N, K each log-uniform in 128..8192 (the stream-K paper's corpus ranges)",
    "llm": "transformer layer GEMMs: a model's widths (LLM_MODELS) x a log-uniform token count in 16..8192",
    "interpret_tiny": "M, N, K each log-uniform in 8..48, no minimum work: --interpret only (CPU tests)",
}
DEFAULT_COUNT = 100
# Rejected draws in a row after which the distribution is taken to have no more distinct shapes
# within the bounds (a draw is accepted with probability >= 1/4 when it has many left).
_MAX_REJECTS_IN_A_ROW = 10_000


def parse_distribution(spec: str) -> tuple[str, int, int]:
    """``NAME[:COUNT[:SEED]]`` -> (name, count, seed); a UsageError names what is wrong."""
    parts = spec.strip().split(":")
    name = parts[0]
    if name not in DISTRIBUTIONS or len(parts) > 3:
        raise UsageError(f"--distribution {spec!r}: expected NAME[:COUNT[:SEED]] with NAME one of "
                         f"{', '.join(DISTRIBUTIONS)}")
    nums = []
    for what, least, text in zip(("COUNT", "SEED"), (1, 0), parts[1:]):
        t = text.strip()
        if not (t.isascii() and t.removeprefix("-").isdigit()):
            raise UsageError(f"--distribution {spec!r}: {what} must be a whole number >= {least}, got {text!r}")
        if int(t) < least:
            raise UsageError(f"--distribution {spec!r}: {what} must be at least {least}, got {int(t)}")
        nums.append(int(t))
    count = nums[0] if nums else DEFAULT_COUNT
    seed = nums[1] if len(nums) > 1 else 0
    return name, count, seed


def _loguniform_int(rng, lo: int, hi: int) -> int:
    import math
    return min(hi, max(lo, round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


def _draw(name: str, rng) -> Shape:
    if name == "llm":
        _, d, f = rng.choice(LLM_MODELS)
        n_out, k_in = rng.choice(((3 * d, d), (d, d), (f, d), (d, f)))
        return (_loguniform_int(rng, *LLM_TOKENS), n_out, k_in)
    lo, hi = INTERPRET_TINY_RANGE if name == "interpret_tiny" else LOGUNIFORM_RANGE
    return tuple(_loguniform_int(rng, lo, hi) for _ in range(3))


def fits_bounds(shape: Shape) -> bool:
    """MIN_FLOPS <= 2MNK <= MAX_FLOPS and M*K + K*N + M*N <= MAX_OPERAND_ELEMENTS."""
    M, N, K = shape
    return MIN_FLOPS <= flops(shape) <= MAX_FLOPS and M * K + K * N + M * N <= MAX_OPERAND_ELEMENTS


def distribution(name: str, count: int, seed: int = 0) -> list[Shape]:
    """``count`` distinct shapes of distribution ``name``, deterministic in ``seed``."""
    import random
    if name not in DISTRIBUTIONS:
        raise UsageError(f"unknown distribution {name!r}; known: {', '.join(DISTRIBUTIONS)}")
    rng = random.Random(f"{name}:{seed}")
    bounded = name != "interpret_tiny"
    out: dict = {}
    rejects = 0
    while len(out) < count:
        if rejects >= _MAX_REJECTS_IN_A_ROW:
            raise UsageError(f"--distribution {name}:{count}:{seed}: only {len(out)} distinct shapes within "
                             f"the bounds ({rejects} draws in a row found no new one); ask for fewer")
        s = _draw(name, rng)
        if s in out or (bounded and not fits_bounds(s)):
            rejects += 1
            continue
        rejects = 0
        out[s] = None
    return list(out)


def distribution_shapes(spec: str, interpret: bool = False) -> list[Shape]:
    """The shapes of one ``--distribution`` flag value; ``interpret_tiny`` only with ``interpret``."""
    name, count, seed = parse_distribution(spec)
    if name == "interpret_tiny" and not interpret:
        raise UsageError(f"--distribution {spec}: interpret_tiny's shapes are below the minimum work "
                         f"(MIN_FLOPS = {MIN_FLOPS:.0e}) a GPU timing needs; it is for --interpret runs only")
    return distribution(name, count, seed)
