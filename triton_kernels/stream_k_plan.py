"""Triton stream_k's plan: the options (OPTIONS), what they imply and where they contradict each
other, and ``_Plan``, which resolves a problem with the heuristic (stream_k_heuristic.py) and
launches the kernels (stream_k_kernels.py) with aligned operand copies (_operands.py), or hands
the problem to the single-row GEMV (stream_k_gemv.py), the matrix-times-vectors kernel
(stream_k_skinny.py) or the Gluon tf32 GEMM (stream_k_gluon.py)."""
from __future__ import annotations

import re

import torch

from compare.families.decompose import most_partials
from compare.harness.errors import UsageError
from compare.harness.problem import DOT_PRECISION
from compare.harness.registry import Option

from ._common import check_block, check_stages, check_warps, interpreting, l2_bytes, sm_count
from ._operands import _aligned, _prepare_a, _prepare_b, fill_both
from .stream_k_decomposition import ALIGN_MAX_IDLE, INTERPRET_SMS, MIN_SK_ITERS, Tile, fixup_shape
from .stream_k_heuristic import (B_TRANSPOSE_CHOICES, DECOMPOSITIONS, OPERAND_CHOICES, TF32_ON_GEMV_PATH,
                                 TF32_ON_SKINNY_PATH, X3_MASK_NAN, X3_SPLIT_CHOICES, _layouts, _swap_pays,
                                 choose_plan, worth_copying, x3_split_plan, x3_uses_ffma)
from .stream_k_gemv import GEMV_MAX_M, GemvPlan, parse_gemv_tile
from .stream_k_skinny import SKINNY_MAX_N, SKINNY_ORDERS, SkinnyPlan, parse_skinny_tile
from .stream_k_gluon import (WS_MAX_SPLITS, WS_MAX_SPLITS_FEW_TILES, WS_SPLITS_LIMIT, WS_TILES, WsPlan, parse_ws_tile,
                             ws_pays, ws_unsupported)
from .stream_k_kernels import _fixup_kernel, _scale_tiles_kernel, _stream_k_kernel

# ---------------------------------------------------------------------------------------------
# Plan and launch.


def _ffma_path(precision: str, tf32_on: bool) -> bool:
    """Does the heuristic send this precision's shapes of one bandwidth-bound class to its FFMA
    path? fp32 (and tf32x3, planned as fp32); tf32 where that class's switch ``tf32_on`` is on
    (TF32_ON_GEMV_PATH for M = 1, TF32_ON_SKINNY_PATH for N <= 8)."""
    return precision == "fp32" or (precision == "tf32" and tf32_on)


def _default_precisions(tf32_on: bool) -> str:
    return "fp32, tf32x3 and tf32" if tf32_on else "fp32 and tf32x3"


_TILE_RE = re.compile(r"^(\d+)x(\d+)x(\d+)(?:/(\d+)(?:/(\d+))?)?$")


def parse_tile(text: str) -> Tile:
    m = _TILE_RE.match(str(text).strip())
    if not m:
        raise ValueError("expected BMxBNxBK[/warps[/stages]], e.g. 128x128x32/8/3")
    bm, bn, bk = (int(g) for g in m.groups()[:3])
    for nm, v in (("BM", bm), ("BN", bn), ("BK", bk)):
        check_block(nm, v, 256)
    warps = int(m.group(4)) if m.group(4) else (8 if bm * bn >= 128 * 128 else 4)
    check_warps(warps)
    stages = int(m.group(5)) if m.group(5) else 3
    check_stages(stages)
    return Tile(bm, bn, bk, warps, stages)


OPTIONS = (
    Option.tile("tile", "BMxBNxBK[/warps[/stages]] (default: the per-shape heuristic), e.g. 128x128x32/8/3",
           parse_tile),
    Option.choice("mode", "decomposition: dp (one program per tile), hybrid (data-parallel waves + stream-K "
           f"for the last partial wave, all of it below one wave), gemv (M <= {GEMV_MAX_M}: B streamed through FFMAs, no tile; "
           f"fp32, tf32x3 through tf32x3_split=ffma, tf32 on inputs truncated to TF32 as the tensor cores "
           f"read them), skinny (N <= {SKINNY_MAX_N}: A streamed once "
           "through FFMAs for all columns, K split to fill the SMs; fp32, tf32x3 through "
           "tf32x3_split=ffma, tf32 on TF32-truncated inputs) or ws (tf32 on sm_90: the warp-specialised "
           "Gluon GEMM, B read as stored, one program per tile and K range); default: the heuristic (gemv for a "
           f"single row in {_default_precisions(TF32_ON_GEMV_PATH)}, skinny for N <= {SKINNY_MAX_N} in "
           f"{_default_precisions(TF32_ON_SKINNY_PATH)}, ws for tf32 where ws_pays)",
           DECOMPOSITIONS),
    Option.count("grid", "number of stream-K programs (default: up to the SM count, >= "
           f"{MIN_SK_ITERS} K-iterations each); implies mode=hybrid"),
    Option.count("sms", "SM count the decomposition assumes (default: the GPU's)"),
    Option.choice("sk_align", "auto (default: on for tf32 when A and B overflow the L2), on: a stream-K "
           "grid that is a multiple of the tile count (every tile's k-th range starts at the same "
           "K offset, so tiles sharing A rows or B columns read them from L2 together; at most "
           f"{ALIGN_MAX_IDLE:.0%} of the programs idle, else the full grid; implies mode=hybrid), off: the full grid",
           ("auto", "on", "off"), default="auto"),
    Option.switch("hint", "on (default): 16-byte alignment hints where true; off: none (what Triton does "
           "unhinted, for comparison)", default=True),
    Option.choice("operands", "auto (default: copy an operand only when it can't be read with 16-byte "
           "loads, plus fp32's M-major A for N >= 2048 and tf32/tf32x3's K-major B for large M; "
           "either only where the GEMM has enough flops per copied byte), "
           "direct (the layouts as given; a copy only where 16-byte loads are impossible), "
           "as_given (never copy: 4-byte loads where 16-byte ones are impossible), "
           "k_major_b (auto, but B always through a K-major copy), copy (A and B always copied "
           "into aligned buffers), copy_a / copy_b (A / B copied wherever it can't be read in the "
           "layout auto prefers with 16-byte loads, the other never copied); mode=skinny takes auto (B's rows "
           "read as given where N <= 7 and M <= 32 N, else a K-major copy), as_given or k_major_b",
           OPERAND_CHOICES, default="auto"),
    Option.choice("b_transpose", "tf32/tf32x3 only: how a row-major (N-major) B reaches the tensor cores, "
           "which take a 32-bit B only K-major: auto (default), copy (a K-major copy before the "
           "GEMM), load (read as given; the compiler transposes with 4-byte async copies), swap "
           "(computes C^T = B^T A^T with B^T as the register operand)", B_TRANSPOSE_CHOICES, default="auto"),
    Option.tile("gemv_tile", "mode=gemv: [1x]BNxBK[/warps[/stages]], the B piece a program streams per step "
           "(default 1x64x128/4/1, 1x256x16/4/1 where B takes 4-byte loads); implies mode=gemv", parse_gemv_tile),
    Option.count("k_splits", "mode=gemv: K ranges per column block, summed in order by a second kernel "
           "(default: enough programs for 8 per SM); implies mode=gemv"),
    Option.tile("skinny_tile", "mode=skinny: BMxBK[/warps], the piece of A a program streams per step "
           "(default 32x64/4; 64x64/4 for N <= 2; where A is read along K 4 bytes at a time, K % 4 != 0: "
           "16x64/4 for N >= 3 and 32x64/4 for N <= 2 up to K = 16384); implies mode=skinny", parse_skinny_tile),
    Option.count("skinny_splits", "mode=skinny: K ranges per row block, summed in range order inside the kernel "
           "(default: enough programs for 4 per SM); implies mode=skinny"),
    Option.choice("skinny_order", "mode=skinny: the order of a program's K steps: in_order (0, 1, 2, ...) or "
           "rotated (program p from step p % steps on, wrapping: the programs in flight read A at "
           "different K offsets); default rotated where K is not split and N >= 3, or N = 7, else in_order "
           "(stream_k_skinny.default_order); implies mode=skinny", SKINNY_ORDERS),
    Option.tile("ws_tile", f"mode=ws: BMxBN, one of {', '.join(sorted(WS_TILES))} (default: the tile and K "
           "split with the least estimated time, stream_k_gluon.ws_seconds); implies mode=ws", parse_ws_tile),
    Option.count("ws_splits", f"mode=ws: K ranges per tile, their partials summed in range order by a second "
           f"kernel (default: 1..{WS_MAX_SPLITS} by the same estimate, up to {WS_MAX_SPLITS_FEW_TILES} for grids of few "
           "tiles); implies mode=ws", maximum=WS_SPLITS_LIMIT),
    Option.choice("tf32x3_split", "tf32x3 only: where A and B are split into TF32 big and small parts: auto "
           "(default: b where B goes through a K-major copy anyway), in_loop (Triton's built-in: both "
           "tiles at every k-step), b (B once, by its K-major copy; implies b_transpose=copy), ab (A "
           "and B once, by copies), a (A once, by a copy, for the swapped product C^T = B^T A^T; "
           "implies b_transpose=swap), ffma (no split: fp32's plan with IEEE dots on the FFMA pipe; the "
           "default for outputs of at most 64x64, 33-64 columns of more rows but tiny outputs, single rows and N <= 8)", X3_SPLIT_CHOICES, default="auto"),
)


# The operands choices mode=skinny takes: auto (B's rows as given where stream_k_skinny.default_b_rows,
# else a K-major copy), as_given (B's rows as given), k_major_b (B through a K-major copy).
SKINNY_OPERANDS = ("auto", "as_given", "k_major_b")


def _skinny_set(o: dict) -> bool:
    """Whether an option of the matrix-times-vectors kernel (mode=skinny) was given."""
    return any(o[k] is not None for k in ("skinny_tile", "skinny_splits", "skinny_order"))


# Options that contradict each other: (when, message), checked in this order on the options as
# given (``o``: every option, None or its default where unset; ``p``: the precision).
CONFLICTS = (
    (lambda o, p: (o["gemv_tile"] is not None or o["k_splits"] is not None) and o["mode"] in ("dp", "hybrid", "skinny", "ws"),
     "options gemv_tile / k_splits (the single-row GEMV) and mode={mode} contradict each other"),
    (lambda o, p: o["mode"] == "gemv" and p == "tf32x3" and o["tf32x3_split"] not in ("auto", "ffma"),
     "mode=gemv runs tf32x3 as fp32 (tf32x3_split=ffma); tf32x3_split={tf32x3_split} contradicts it"),
    (lambda o, p: (o["mode"] == "gemv" or o["gemv_tile"] is not None or o["k_splits"] is not None) and (
        o["grid"] is not None or o["sk_align"] != "auto" or o["operands"] != "auto" or o["b_transpose"] != "auto"),
     "mode=gemv reads A and B as given and has no stream-K grid: options grid, sk_align, operands and "
     "b_transpose do not apply to it"),
    (lambda o, p: _skinny_set(o) and o["mode"] in ("dp", "hybrid", "gemv", "ws"),
     "options skinny_tile / skinny_splits / skinny_order (the matrix-times-vectors kernel) and mode={mode} "
     "contradict each other"),
    (lambda o, p: _skinny_set(o) and (o["gemv_tile"] is not None or o["k_splits"] is not None),
     "options skinny_tile / skinny_splits / skinny_order (mode=skinny) and gemv_tile / k_splits (mode=gemv) "
     "contradict each other"),
    (lambda o, p: o["mode"] == "skinny" and p == "tf32x3" and o["tf32x3_split"] not in ("auto", "ffma"),
     "mode=skinny runs tf32x3 as fp32 (tf32x3_split=ffma); tf32x3_split={tf32x3_split} contradicts it"),
    (lambda o, p: (o["mode"] == "skinny" or _skinny_set(o)) and (
        o["grid"] is not None or o["sk_align"] != "auto" or o["operands"] not in SKINNY_OPERANDS
        or o["b_transpose"] != "auto"),
     "mode=skinny reads A as given and B K-major (operands=k_major_b) or as given (operands=as_given) and has no "
     "stream-K grid: options grid, sk_align, b_transpose and operands={operands} do not apply to it"),
    (lambda o, p: (o["ws_tile"] is not None or o["ws_splits"] is not None) and o["mode"] in ("dp", "hybrid", "gemv", "skinny"),
     "options ws_tile / ws_splits (the warp-specialised Gluon GEMM) and mode={mode} contradict each other"),
    (lambda o, p: (o["mode"] == "ws" or o["ws_tile"] is not None or o["ws_splits"] is not None) and p != "tf32",
     "mode=ws (the tensor-core GEMM with B^T in wgmma's registers) applies to tf32, not {precision}"),
    (lambda o, p: (o["mode"] == "ws" or o["ws_tile"] is not None or o["ws_splits"] is not None) and (
        o["grid"] is not None or o["sk_align"] != "auto" or o["operands"] != "auto" or o["b_transpose"] != "auto"),
     "mode=ws (A and B read as stored by TMA, one program per tile and K range) and options grid, sk_align, operands, "
     "b_transpose contradict each other"),
    (lambda o, p: o["grid"] is not None and o["mode"] == "dp",
     "options grid= and mode=dp contradict each other: grid is the stream-K program count"),
    (lambda o, p: o["grid"] is not None and o["sk_align"] != "auto",
     "options grid= and sk_align={sk_align} contradict each other: grid sets the program count"),
    (lambda o, p: o["mode"] == "dp" and o["sk_align"] == "on",
     "options mode=dp and sk_align=on contradict each other: sk_align shapes the stream-K grid"),
    (lambda o, p: o["b_transpose"] != "auto" and p == "fp32",
     "option b_transpose applies to tf32 and tf32x3 (tensor cores); fp32 uses FFMA"),
    (lambda o, p: o["b_transpose"] not in ("auto", "copy") and o["operands"] == "k_major_b",
     "options operands=k_major_b and b_transpose={b_transpose} contradict each other"),
    (lambda o, p: o["b_transpose"] == "copy" and o["operands"] in ("as_given", "copy_a"),
     "options operands={operands} (B not copied) and b_transpose=copy contradict each other"),
    (lambda o, p: o["tf32x3_split"] != "auto" and p != "tf32x3",
     "option tf32x3_split applies to precision tf32x3, not {precision}"),
    # b / ab: B is split by its K-major copy.
    (lambda o, p: o["tf32x3_split"] in ("b", "ab") and o["b_transpose"] in ("load", "swap"),
     "options tf32x3_split={tf32x3_split} (B split by a K-major copy) and b_transpose={b_transpose} "
     "contradict each other"),
    (lambda o, p: o["tf32x3_split"] in ("b", "ab") and o["operands"] in ("as_given", "copy_a"),
     "options tf32x3_split={tf32x3_split} (copies) and operands={operands} (no copy of B) contradict each other"),
    (lambda o, p: o["tf32x3_split"] == "ab" and o["operands"] == "copy_b",
     "options tf32x3_split={tf32x3_split} (copies) and operands={operands} (no copy of A) contradict each other"),
    (lambda o, p: o["tf32x3_split"] == "ffma" and o["b_transpose"] != "auto",
     "options tf32x3_split=ffma (fp32 dots, no tensor cores) and b_transpose={b_transpose} contradict each other"),
    # a: A^T, the swapped product's shared-memory operand, is split by a copy of A.
    (lambda o, p: o["tf32x3_split"] == "a" and o["b_transpose"] in ("load", "copy"),
     "option tf32x3_split=a (the swapped product, A split by a copy) contradicts b_transpose={b_transpose}"),
    (lambda o, p: o["tf32x3_split"] == "a" and o["operands"] in ("as_given", "k_major_b", "copy_b"),
     "option tf32x3_split=a (the swapped product, A split by a copy) contradicts operands={operands}"),
)
# What an option set implies for another, applied in order after the conflicts: (when, option, value).
IMPLIES = (
    (lambda o: o["gemv_tile"] is not None or o["k_splits"] is not None, "mode", "gemv"),
    (lambda o: o["mode"] == "gemv", "tf32x3_split", "ffma"),  # the GEMV multiplies tf32x3 as fp32
    (lambda o: _skinny_set(o), "mode", "skinny"),
    (lambda o: o["mode"] == "skinny", "tf32x3_split", "ffma"),  # so does the N <= 8 kernel
    (lambda o: o["ws_tile"] is not None or o["ws_splits"] is not None, "mode", "ws"),
    (lambda o: o["grid"] is not None, "mode", "hybrid"),        # grid is the stream-K program count
    (lambda o: o["sk_align"] == "on", "mode", "hybrid"),        # alignment shapes the stream-K grid
    (lambda o: o["tf32x3_split"] in ("b", "ab"), "b_transpose", "copy"),   # B split by its K-major copy
    (lambda o: o["tf32x3_split"] == "a", "b_transpose", "swap"),          # the swapped product
)
DEFAULTS = {"mode": None, "grid": None, "sk_align": "auto", "operands": "auto", "b_transpose": "auto",
            "tf32x3_split": "auto", "gemv_tile": None, "k_splits": None, "skinny_tile": None,
            "skinny_splits": None, "skinny_order": None, "ws_tile": None, "ws_splits": None}


def resolve_options(options: dict, precision: str) -> dict:
    """The plan options with defaults, refused where they contradict (CONFLICTS, a UsageError
    naming both) and completed by what they imply (IMPLIES)."""
    o = {k: (options.get(k) if options.get(k) is not None else d) for k, d in DEFAULTS.items()}
    for when, message in CONFLICTS:
        if when(o, precision):
            raise UsageError(message.format(precision=precision, **o))
    for when, name, value in IMPLIES:
        if when(o):
            o[name] = value
    return o


class _Plan:
    def __init__(self, A, B, C, alpha, beta, precision, deterministic, options=None):
        options = dict(options or {})
        self.M, self.K = A.shape
        self.N = B.shape[1]
        self.C, self.alpha, self.beta, self.precision = C, float(alpha), float(beta), precision
        self.deterministic = deterministic
        sms = options.get("sms") or (INTERPRET_SMS if interpreting() else sm_count(A.device))
        o = resolve_options(options, precision)
        # The precision the plan is made for: tf32x3_split=ffma plans (and multiplies) as fp32.
        ffma = precision == "tf32x3" and x3_uses_ffma(self.M, self.N, self.K, sms, o["tf32x3_split"], o["b_transpose"],
                                                      options.get("tile"), B)
        if ffma:
            o["tf32x3_split"], precision = "ffma", "fp32"
        self.dot_precision = DOT_PRECISION[precision]
        self.gemv = self.skinny = self.ws = None
        if o["mode"] == "gemv" or (o["mode"] is None and self._gemv_by_default(precision, options, o)):
            self.gemv = GemvPlan(A, B, C, alpha, beta, sms, o["gemv_tile"], o["k_splits"], tf32=precision == "tf32")
            self.config = dict(self.gemv.config, tf32x3_split="ffma" if ffma else "n/a",
                               chosen_by=self._chosen_by(options))
            return
        if o["mode"] == "skinny" or (o["mode"] is None and self._skinny_by_default(precision, options, o)):
            self.skinny = SkinnyPlan(A, B, C, alpha, beta, sms, o["skinny_tile"], o["skinny_splits"],
                                     tf32=precision == "tf32", order=o["skinny_order"],
                                     b_rows={"as_given": True, "k_major_b": False}.get(o["operands"]))
            self.config = dict(self.skinny.config, tf32x3_split="ffma" if ffma else "n/a",
                               chosen_by=self._chosen_by(options))
            return
        if o["mode"] == "ws" and options.get("tile") is not None:
            raise UsageError("options tile (the stream-K tile GEMM's) and mode=ws contradict each other: "
                             "mode=ws takes ws_tile")
        if o["mode"] == "ws" or (o["mode"] is None and self._ws_by_default(A, B, C, precision, sms, options, o)):
            self.ws = WsPlan(A, B, C, alpha, beta, sms, o["ws_tile"], o["ws_splits"])
            self.config = dict(self.ws.config, tf32x3_split="n/a", chosen_by=self._chosen_by(options))
            return
        mode, grid, sk_align = o["mode"], o["grid"], o["sk_align"]
        tile = options.get("tile")
        if isinstance(tile, str):
            tile = parse_tile(tile)
        align = None if sk_align == "auto" else sk_align == "on"
        self.tile, self.d = choose_plan(self.M, self.N, self.K, precision, sms, tile, mode, grid, align,
                                        l2_bytes(A.device))

        self._prepare_operands(A, B, precision, o, ffma)
        self._set_hints(C, options)
        self._stream_k_workspace(A, deterministic)
        self.config = self._tile_config(precision, sms, options)

    def _prepare_operands(self, A, B, precision: str, o: dict, ffma: bool) -> None:
        """A and B as the tile GEMM reads them (the layout, a copy where it pays or is asked for,
        the swapped product, tf32x3's split operands): self.a, self.b, self.swap_ab, self.x3_split."""
        operands, b_transpose, x3_split = o["operands"], o["b_transpose"], o["tf32x3_split"]
        if b_transpose == "auto" and operands in ("auto", "as_given", "copy_a", "copy_b") and _swap_pays(precision, self.M, self.N, B, self.tile):
            b_transpose = "swap"
        a_major, b_major = _layouts(precision, self.M, self.N, self.tile,
                                    k_major_b=operands == "k_major_b" or b_transpose == "copy")
        if b_transpose in ("load", "swap"):
            b_major = "n"
        if operands in ("direct", "as_given"):
            # The layouts as given.
            a_major = "m" if A.stride(0) == 1 and A.stride(1) != 1 else "k"
            b_major = "k" if B.stride(0) == 1 and B.stride(1) != 1 else "n"
        # A copy is taken only where it pays for itself (worth_copying), always with
        # operands=copy/direct/k_major_b (copy_a / copy_b: for that operand), never with
        # as_given (4-byte loads where unaligned).
        M, N, K = self.M, self.N, self.K
        copy_a = operands in ("copy", "direct", "k_major_b", "copy_a") or (
            operands == "auto" and worth_copying(precision, M, N, K, "a"))
        copy_b = operands in ("copy", "direct", "k_major_b", "copy_b") or b_transpose == "copy" or (
            operands == "auto" and worth_copying(precision, M, N, K, "b"))
        self.a = _prepare_a(A, a_major, allow_direct=operands != "copy", allow_copy=copy_a)
        self.b = _prepare_b(B, b_major, allow_direct=operands != "copy", allow_copy=copy_b)
        # The swapped product only where B reaches the dot N-major.
        self.swap_ab = b_transpose == "swap" and precision != "fp32" and not self.b.k_contiguous
        if precision == "tf32x3" and x3_split == "auto":
            x3_split = x3_split_plan(M, N, K, self.b.layout, self.swap_ab)
        if x3_split in ("b", "ab"):
            if not (self.b.copy_dst is not None and self.b.k_contiguous):
                self.b = _prepare_b(B, "k", allow_direct=False)
            self.b = self.b.split()
        if x3_split == "a" and not self.swap_ab:
            raise UsageError("tf32x3_split=a needs the swapped product, which reads B N-major; this B "
                             f"is read {self.b.layout} K-major: use tf32x3_split=b or ab")
        if x3_split in ("ab", "a"):
            if not (self.a.copy_dst is not None and self.a.k_contiguous):
                self.a = _prepare_a(A, "k", allow_direct=False)
            self.a = self.a.split()
        self.x3_split = "ffma" if ffma else x3_split if precision == "tf32x3" else "n/a"

    def _set_hints(self, C, options: dict) -> None:
        """The operands' and C's 16-byte alignment hints (self.hint, a_hint, b_hint, c_hint)."""
        # The 16-byte hints where true (every copy satisfies them; an operand read as given
        # only when its strides do); hint=off only to compare with what Triton does unhinted
        # (python -m reproduce.stream_k_study --ptx).
        self.hint = bool(options.get("hint", True))
        self.a_hint = self.hint and self.a.hinted
        self.b_hint = self.hint and self.b.hinted
        self.c_hint = self.hint and (C.stride(1) == 1 and C.stride(0) % 4 == 0 and self.N % 4 == 0 and _aligned(C))

    def _stream_k_workspace(self, A, deterministic: bool) -> None:
        """The stream-K programs' share of iterations (sk_q, sk_r), the fixup's shape and, for the
        deterministic fixup, the partials' workspace self.W."""
        d, t = self.d, self.tile
        self.sk_q, self.sk_r = (divmod(d.sk_tiles * d.iters, d.sk_programs) if d.sk_programs else (0, 0))
        self.W = None
        # The fixup's (partials per step, piece rows, piece columns), fixed by the plan.
        self.fixup = fixup_shape(most_partials(d.iters, self.sk_q), t.bm, t.bn)
        if d.sk_programs and deterministic:
            n = d.sk_programs * d.max_segments * t.bm * t.bn
            if n > 2**31 - 1:
                raise UsageError(f"stream-K workspace of {n} elements exceeds 32-bit indexing; use fewer programs")
            self.W = torch.empty(n, device=A.device, dtype=torch.float32)

    def _tile_config(self, precision: str, sms: int, options: dict) -> dict:
        """The row's config of a tile GEMM plan (every choice the plan made, and who made it)."""
        d, t, deterministic = self.d, self.tile, self.deterministic
        split_tiles = sum(1 for tt in range(d.sk_tiles) if self._split(tt))
        return {
            "tile": t.dims, "num_warps": t.warps, "num_stages": t.stages, "group_m": t.group_m,
            "decomposition": d.mode, "tiles": d.tiles, "iters_per_tile": d.iters, "sk_tiles": d.sk_tiles,
            "split_tiles": split_tiles, "sk_programs": d.sk_programs, "dp_tiles": d.dp_tiles, "grid": d.grid,
            "sms": sms, "programs_per_sm": d.per_sm,
            "sk_align": ("n/a" if not d.sk_programs else "on" if d.aligned else "off"), "fixup": ("none" if not split_tiles else
                                  "workspace + fixed-order fixup kernel" if deterministic else
                                  "beta pre-scale + atomic_add"),
            "operands": f"A {self.a.layout}, B {self.b.layout}", "operand_copy_bytes":
                self.a.copy_bytes() + self.b.copy_bytes(), "c_vector_hint": self.c_hint,
            "b_transpose": ("n/a" if precision == "fp32" else "k_major" if self.b.k_contiguous else
                            "swap" if self.swap_ab else "load"),
            "input_precision": self.dot_precision, "tf32x3_split": self.x3_split,
            # What the user set (any option: operands, b_transpose and tf32x3_split change the
            # plan as much as tile does), as the CUDA family records it.
            "chosen_by": self._chosen_by(options),
        }

    def _gemv_by_default(self, precision: str, options: dict, o: dict) -> bool:
        """The heuristic's GEMV: a single row in fp32 (tf32x3 arrives here as fp32 through ffma;
        tf32 where TF32_ON_GEMV_PATH, on) where the user set nothing that shapes the tile GEMM."""
        return (self.M <= GEMV_MAX_M and _ffma_path(precision, TF32_ON_GEMV_PATH)
                and not self._shaped(options, o))

    def _skinny_by_default(self, precision: str, options: dict, o: dict) -> bool:
        """The heuristic's matrix times 1-8 vectors: N <= SKINNY_MAX_N in fp32 (tf32x3 arrives as
        fp32 through ffma; tf32 where TF32_ON_SKINNY_PATH, off; M <= GEMV_MAX_M took the GEMV
        first) where the user set nothing that shapes the tile GEMM."""
        return (self.N <= SKINNY_MAX_N and _ffma_path(precision, TF32_ON_SKINNY_PATH)
                and not self._shaped(options, o))

    def _ws_by_default(self, A, B, C, precision: str, sms: int, options: dict, o: dict) -> bool:
        """The heuristic's Gluon GEMM: tf32 on operands it can read (ws_unsupported), where
        ws_pays and the user set nothing that shapes the tile GEMM."""
        return (precision == "tf32" and not self._shaped(options, o) and ws_pays(self.M, self.N, self.K, sms)
                and not ws_unsupported(A, B, C))

    @staticmethod
    def _shaped(options: dict, o: dict) -> bool:
        """The user set a tile or an option that shapes the tile GEMM (not tf32x3_split or mode)."""
        return options.get("tile") is not None or any(
            o[k] != v for k, v in DEFAULTS.items() if k not in ("tf32x3_split", "mode"))

    @staticmethod
    def _chosen_by(options: dict) -> str:
        given = sorted(k for k, v in options.items() if v is not None)
        return f"user ({', '.join(given)}), heuristic (the rest)" if given else "heuristic"

    def _split(self, tile: int) -> bool:
        """Host twin of the kernels' test: is stream-K tile ``tile`` shared by two programs?"""
        lo = tile * self.d.iters
        return self._owner(lo + self.d.iters - 1) > self._owner(lo)

    def _owner(self, i: int) -> int:
        q, r = self.sk_q, self.sk_r
        big = r * (q + 1)
        return i // (q + 1) if i < big else r + (i - big) // max(q, 1)

    def _common(self):
        t = self.tile
        return dict(BLOCK_M=t.bm, BLOCK_N=t.bn, BLOCK_K=t.bk, GROUP_M=t.group_m)

    def launch(self):
        if self.gemv is not None:
            self.gemv.launch()
            return
        if self.skinny is not None:
            self.skinny.launch()
            return
        if self.ws is not None:
            self.ws.launch()
            return
        C, d, t = self.C, self.d, self.tile
        fill_both(self.a, self.b)
        av, bv = self.a.view, self.b.view
        split = self.config["split_tiles"] > 0
        atomic = split and not self.deterministic
        if atomic:
            _scale_tiles_kernel[(d.sk_tiles,)](C, self.M, self.N, C.stride(0), C.stride(1), self.beta, self.K,
                                               self.sk_q, self.sk_r, BETA_ZERO=self.beta == 0, C_HINT=self.c_hint,
                                               num_warps=4, **self._common())
        w = self.W if self.W is not None else C
        a_small = self.a.small if self.a.small is not None else av
        b_small = self.b.small if self.b.small is not None else bv
        _stream_k_kernel[(d.grid,)](
            av, bv, C, w, a_small, b_small, self.M, self.N, self.K, self.a.wrap, self.b.wrap,
            av.stride(0), av.stride(1), bv.stride(0), bv.stride(1), C.stride(0), C.stride(1),
            self.alpha, self.beta, 1.0, d.sk_tiles, d.sk_programs, self.sk_q, self.sk_r, d.max_segments,
            DOT_PRECISION=self.dot_precision, SWAP_AB=self.swap_ab,
            SPLIT_A=self.a.small is not None, SPLIT_B=self.b.small is not None, MASK_NAN=X3_MASK_NAN,
            ATOMIC=atomic, HAS_BETA=self.beta != 0,
            A_K_CONTIG=self.a.k_contiguous, B_K_CONTIG=self.b.k_contiguous, A_HINT=self.a_hint,
            B_HINT=self.b_hint, C_HINT=self.c_hint,
            EVEN_K=self.K % t.bk == 0, num_warps=t.warps, num_stages=t.stages, **self._common())
        if split and self.deterministic:
            segs, fm, fn = self.fixup
            _fixup_kernel[(d.sk_tiles, (t.bm // fm) * (t.bn // fn))](
                self.W, C, self.M, self.N, self.K, C.stride(0), C.stride(1), self.alpha, self.beta,
                self.sk_q, self.sk_r, d.max_segments, HAS_BETA=self.beta != 0, C_HINT=self.c_hint,
                FIX_M=fm, FIX_N=fn, FIX_SEGS=segs, num_warps=4, **self._common())
