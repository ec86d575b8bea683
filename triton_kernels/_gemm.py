"""What the tile GEMMs (tiled.py, split_k.py) share: the tile loop, the grouped launch order,
the config lists' vocabulary, how a config is chosen (user / heuristic / autotuner on a scratch
output) and the options a user sets them with.

The GEMM ideas stay in their modules; this is the machinery around them.
"""
from __future__ import annotations

import re
import time
from typing import Callable, Optional

import torch
import triton
import triton.language as tl

from compare.harness.errors import UsageError
from compare.harness.problem import PRECISIONS
from compare.harness.registry import Option

from . import _operands as ops
from ._common import check_block, check_gemm_args, check_stages, check_warps, interpreting


# ---------------------------------------------------------------------------------------------
# Configs: BLOCK_M x BLOCK_N x BLOCK_K tiles, warps, pipeline stages, GROUP_M.


def cfg(bm, bn, bk, warps, stages, group_m=8) -> triton.Config:
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


# Under TRITON_INTERPRET=1: small, and GROUP_M = 2 so that test shapes with an odd number of
# tile rows end on a partial group (the case the grouped order's min() exists for).
INTERPRET_CONFIG = cfg(64, 64, 64, 4, 1, group_m=2)
DEFAULT_GROUP_M = 8


def config_name(c: triton.Config) -> str:
    """"BMxBNxBK/warps/stages", plus "/group_m" when GROUP_M is not 8: the text the ``config``
    option takes, so a reported config can be passed back to reproduce it."""
    k = c.kwargs
    s = f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']}/{c.num_warps}/{c.num_stages}"
    return s if k["GROUP_M"] == DEFAULT_GROUP_M else f"{s}/{k['GROUP_M']}"


def config_dict(c: triton.Config) -> dict:
    k = c.kwargs
    return {"config": config_name(c), "tile": f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']}",
            "num_warps": c.num_warps, "num_stages": c.num_stages, "group_m": k["GROUP_M"]}


_CONFIG_RE = re.compile(r"^(\d+)x(\d+)x(\d+)/(\d+)/(\d+)(?:/(\d+))?$")


def parse_config(text: str) -> triton.Config:
    m = _CONFIG_RE.match(text.strip())
    if not m:
        raise ValueError("expected BMxBNxBK/warps/stages[/group_m], e.g. 128x128x32/8/3")
    bm, bn, bk, warps, stages = (int(g) for g in m.groups()[:5])
    group_m = int(m.group(6)) if m.group(6) else DEFAULT_GROUP_M
    for name, v in (("BM", bm), ("BN", bn), ("BK", bk)):
        check_block(name, v)
    check_warps(warps)
    check_stages(stages)
    if group_m < 1:
        raise ValueError(f"group_m={group_m} must be >= 1")
    return cfg(bm, bn, bk, warps, stages, group_m)


def smem_limit() -> int:
    try:
        dev = torch.cuda.current_device()
        return triton.runtime.driver.active.utils.get_device_properties(dev)["max_shared_mem"]
    except Exception:
        return 227 * 1024


def smem_bytes(c: triton.Config) -> int:
    """Shared memory of the pipelined fp32 operand buffers."""
    k = c.kwargs
    return c.num_stages * (k["BLOCK_M"] + k["BLOCK_N"]) * k["BLOCK_K"] * 4


def candidates(table: dict, dot_precision: str, M: int, N: int, trim_to_output: bool) -> list:
    """The configs written for this precision that fit the GPU's shared memory; with
    ``trim_to_output``, tiles far larger than a tiny output are dropped too (they only waste the
    launch). Never empty: the last config of the list is the fallback."""
    mine = table[dot_precision]
    limit = smem_limit()
    keep = [c for c in mine if smem_bytes(c) <= limit]
    if trim_to_output:
        small = [c for c in keep if c.kwargs["BLOCK_M"] <= max(64, 2 * M) and c.kwargs["BLOCK_N"] <= max(64, 2 * N)]
        keep = small or keep
    return keep or [mine[-1]]


def default_config(table: dict, dot_precision: str, M: int, N: int, trim_to_output: bool) -> triton.Config:
    """The config used without autotuning: the first candidate (the interpreter's one config)."""
    if interpreting():
        return INTERPRET_CONFIG
    return candidates(table, dot_precision, M, N, trim_to_output)[0]


def all_configs(table: dict) -> list:
    """The autotuner's full list (pruned per call by precision): every config of the table once."""
    if interpreting():
        return [INTERPRET_CONFIG]
    return list(dict.fromkeys(c for v in table.values() for c in v))   # Config hashes by its fields


def bare(kernel):
    """The jitted function under @triton.autotune / @triton.heuristics."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    while isinstance(kernel, (Autotuner, Heuristics)):
        kernel = kernel.fn
    return kernel


# ---------------------------------------------------------------------------------------------
# The tile loop and the launch order.


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of program ``pid`` in the grouped launch order: walk GROUP_M tile
    rows down one column of tiles before moving right, so programs running at the same time
    reuse the same A rows and B columns from L2 instead of streaming all of B per tile row. The
    last group is shorter when the tile-row count isn't a multiple of GROUP_M (the min)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def wrapped_range(pid, BLOCK: tl.constexpr, extent):
    """pid*BLOCK + [0, BLOCK) wrapped into [0, extent): rows/columns past the edge wrap around
    instead of being masked, so the loads stay unpredicated along M and N and the wrapped
    values only feed C elements that are never stored.

    Declared contiguous (max_contiguous): "% extent" hides from the compiler that the offsets
    run consecutively, and where extent is not a multiple of 16 and the operand is contiguous
    along this axis (B row-major, or an M-major A) the compiler then ordered the load's lanes
    along K, one row per lane, 32 rows per warp load (compiled for sm_90: triton.tiled at 1000^3
    fp32 loaded B with threadsPerWarp [32, 1] along K; results/h100/explore/round13). The claim
    cannot widen a load past what is true: the vector width also needs the offsets'
    divisibility, which "% extent" leaves at 1 unless extent is a multiple of 16, and then the
    wraps fall on 16-element boundaries that no 4-element vector crosses."""
    offs = (pid * BLOCK + tl.arange(0, BLOCK)) % extent
    return tl.max_contiguous(offs, BLOCK)


@triton.jit
def mac_loop(acc, a_ptr, b_ptr, offs_am, offs_bn, k_lo, k_hi,
             stride_am, stride_ak, stride_bk, stride_bn,
             DOT_PRECISION: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr):
    """acc += A[offs_am, k_lo:k_hi] @ B[k_lo:k_hi, offs_bn], BLOCK_K at a time.

    The whole GEMM idea in one loop: load a BLOCK_M x BLOCK_K tile of A and a BLOCK_K x BLOCK_N
    tile of B, multiply-accumulate with tl.dot. The compiler stages the tiles in shared memory,
    pipelines the loads num_stages deep and picks the register layout (EVEN_K: k_hi - k_lo is
    a multiple of BLOCK_K, so no load needs a mask)."""
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + (k_lo + offs_k)[None, :] * stride_ak
    b_ptrs = b_ptr + (k_lo + offs_k)[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    for k in range(k_lo, k_hi, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_hi - k, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_hi - k, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def mac(acc, a_ptr, b_ptr, offs_am, offs_bn, k_lo, k_hi,
        stride_am, stride_ak, stride_bk, stride_bn,
        DOT_PRECISION: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr):
    """acc += A @ B over [k_lo, k_hi): the FFMA (ieee) path as one loop; the tensor-core paths
    with their first BLOCK_K step peeled into a loop of its own.

    Why the peel: with the accumulator starting at zero and one K loop, ptxas 12.8 (bundled with
    Triton 3.6) serialises the loop's wgmma instructions for 128x128 and 256x128 tiles with 8
    warps: every wgmma is followed by a wait for it to finish (SASS: WARPGROUP.DEPBAR.LE gsb0,
    0x0 after each HGMMA), so the tensor cores idle while the next is issued. Entering the main
    loop with an accumulator produced by an earlier loop keeps the wgmma groups asynchronous
    (one wait per k-step, one group in flight)."""
    if DOT_PRECISION == "ieee":
        acc = mac_loop(acc, a_ptr, b_ptr, offs_am, offs_bn, k_lo, k_hi, stride_am, stride_ak, stride_bk,
                       stride_bn, DOT_PRECISION, BLOCK_K, EVEN_K)
    else:
        k_mid = tl.minimum(k_lo + BLOCK_K, k_hi)
        acc = mac_loop(acc, a_ptr, b_ptr, offs_am, offs_bn, k_lo, k_mid, stride_am, stride_ak, stride_bk,
                       stride_bn, DOT_PRECISION, BLOCK_K, EVEN_K)
        acc = mac_loop(acc, a_ptr, b_ptr, offs_am, offs_bn, k_mid, k_hi, stride_am, stride_ak, stride_bk,
                       stride_bn, DOT_PRECISION, BLOCK_K, EVEN_K)
    return acc


# ---------------------------------------------------------------------------------------------
# Operand modes.

# The M-major copy of A costs ~8*M*K bytes of traffic against 2*M*N*K FFMA flops: ~1.5% at
# N = 4096 but 11% at N = 256 (measured in split-K: 86% -> 80% of cuBLAS at 256x256x131072).
# It is used from this N up, where it was measured to pay (2048..8192: +8..11%).
M_MAJOR_A_MIN_N = 2048
OPERAND_MODES = (ops.AS_GIVEN, ops.K_MAJOR_B, ops.M_MAJOR_A)


@triton.jit
def store_c(acc, c_ptr, offs_cm, offs_cn, M, N, stride_cm, stride_cn, alpha, beta, HAS_BETA: tl.constexpr):
    # C = alpha*acc + beta*C on the rows offs_cm / columns offs_cn that exist. With beta == 0 C is
    # never loaded (BLAS: C may hold NaN on entry).
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    out = acc * alpha
    if HAS_BETA:
        out += beta * tl.load(c_ptrs, mask=c_mask, other=0.0)
    tl.store(c_ptrs, out, mask=c_mask)


def operand_mode(precision: str, override: Optional[str] = None, N: Optional[int] = None) -> str:
    """How A and B reach the kernel (see _operands.py): fp32 reads A through an M-major copy
    (when ``N`` is given and >= M_MAJOR_A_MIN_N) and B as given; tf32 and tf32x3 read B through
    a K-major copy. ``override`` picks another mode: as_given | k_major_b | m_major_a (fp32 only)."""
    mode = override
    if mode is None:
        fp32 = ops.M_MAJOR_A if N is not None and N >= M_MAJOR_A_MIN_N else ops.AS_GIVEN
        mode = {"fp32": fp32, "tf32": ops.K_MAJOR_B, "tf32x3": ops.K_MAJOR_B}[precision]
    if mode not in OPERAND_MODES:
        raise UsageError(f"unknown operand mode {mode!r}; choose {', '.join(OPERAND_MODES)}")
    if mode == ops.M_MAJOR_A and precision != "fp32":
        raise UsageError(f"operand mode 'm_major_a' is an fp32 (FFMA) layout; precision is {precision!r}")
    return mode


# ---------------------------------------------------------------------------------------------
# Options (compare.harness.registry.Option): what a user may set; the kernel chooses the rest.


TILE_OPTIONS = (
    Option.choice("operands", "how A and B reach tl.dot: as_given (never copied), k_major_b (B through a K-major "
           "copy; tf32/tf32x3 default), m_major_a (A through an M-major copy; fp32 default for N >= "
           f"{M_MAJOR_A_MIN_N})", OPERAND_MODES),
    Option.switch("autotune", "on (default): time the candidate configs once per tuning key, on a scratch "
           "output; off: the first candidate of the precision's list", default=True),
    Option.tile("tile", "a fixed config BMxBNxBK/warps/stages[/group_m] (no autotuning), e.g. "
           "128x128x32/8/3: reproduces a sweep row or a reported config", parse_config),
)


def tile_options(configs: dict) -> tuple:
    """TILE_OPTIONS with the tile option's candidates: every config of ``configs`` (per
    precision, the autotune lists), as the text the option takes."""
    import dataclasses
    texts = tuple(dict.fromkeys(config_name(c) for cs in configs.values() for c in cs))
    return tuple(dataclasses.replace(o, candidates=texts) if o.name == "tile" else o for o in TILE_OPTIONS)


def read_options(options: Optional[dict], precision: str, N: Optional[int]) -> tuple:
    """(operand mode, its chooser, fixed config or None, autotune on?) from a prepare's options."""
    options = options or {}
    user_mode = options.get("operands")
    mode = operand_mode(precision, user_mode, N)
    config = options.get("tile")
    if isinstance(config, str):
        config = parse_config(config)
    autotune = options.get("autotune", True)
    if config is not None and options.get("autotune") is True:
        raise UsageError("options tile= and autotune=on contradict each other: a fixed tile is not tuned")
    return mode, ("user" if user_mode else "heuristic"), config, autotune


# ---------------------------------------------------------------------------------------------
# Choosing a config and launching with it.


class ConfigChooser:
    """Resolves the config of one autotuned kernel and launches the bare jitted function with it.

    ``triton.autotune`` times its candidates by launching the kernel many times on the arguments
    it is given. For ``C = alpha*A@B + beta*C`` with beta != 0 (or an atomically accumulating
    split-K) doing that on the real C would leave garbage in it. So the autotuner is only ever
    called on a scratch copy of C (``tune_on_scratch``), once per tuning key; its choice
    (``best_config``, also cached on disk by cache_results=True) is remembered here, and every
    launch on the real C goes to the bare jitted function with that config: autotuning can't
    reach the real C whatever its key.

    ``key`` must hold every argument value that makes a different kernel or a different best
    tile: it is the tuple of the arguments named in the autotuner's own key (``tune_key``), so
    the two caches can't disagree.
    """

    def __init__(self, autotuned, key_names: list):
        self.autotuned = autotuned
        self.jit = bare(autotuned)
        self.key_names = tuple(key_names)
        self.chosen: dict = {}    # tuning key -> (Config, seconds the tuning call took)
        # Under the interpreter the autotuner has one config, so nothing is timed and there is
        # nothing to protect C from; tests switch this on to exercise the scratch path on CPU.
        self.tune_in_interpreter = False

    def tune_key(self, args: tuple, constexprs: dict) -> tuple:
        named = dict(zip(self.jit.arg_names, args), **constexprs)
        return tuple(named[n] for n in self.key_names)

    def resolve(self, C: torch.Tensor, args_for: Callable[[torch.Tensor], tuple], constexprs: dict,
                default: triton.Config, user: Optional[triton.Config], autotune: bool,
                grid_extra: tuple = ()) -> tuple[triton.Config, dict]:
        """(config, what to report), chosen_by user | heuristic | autotune. ``args_for(C)`` gives the
        kernel's positional arguments for an output C; ``grid_extra`` are grid axes after the
        tile axis (split-K's chunks)."""
        if user is not None:
            chosen, by = user, "user"
        elif not autotune or (interpreting() and not self.tune_in_interpreter):
            chosen, by = default, "heuristic"
        else:
            key = self.tune_key(args_for(C), constexprs)
            if key not in self.chosen:
                t0 = time.perf_counter()
                scratch = scratch_like(C)
                M, N = C.shape
                grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), *grid_extra)
                self.autotuned[grid](*args_for(scratch), **constexprs)
                if scratch.is_cuda:
                    torch.cuda.synchronize(scratch.device)
                self.chosen[key] = (self.autotuned.best_config, time.perf_counter() - t0)
            chosen, by = self.chosen[key][0], "autotune"
        return chosen, dict(config_dict(chosen), chosen_by=by, autotune="on" if by == "autotune" else "off")

    def launch(self, C: torch.Tensor, args: tuple, config: triton.Config, grid_extra: tuple = (),
               **constexprs) -> None:
        """The bare kernel on the real C with ``config`` (no autotuner in the way)."""
        k = config.kwargs
        M, N = C.shape
        grid = (triton.cdiv(M, k["BLOCK_M"]) * triton.cdiv(N, k["BLOCK_N"]), *grid_extra)
        self.jit[grid](*args, **constexprs, **config.all_kwargs())



def even_k(K: int, block_k: int, chunk: Optional[int] = None) -> bool:
    """No K load needs a mask: K (and the split chunk) are multiples of BLOCK_K."""
    return K % block_k == 0 and (chunk is None or chunk % block_k == 0)


def scratch_like(C: torch.Tensor) -> torch.Tensor:
    """A copy of C with its strides (empty_strided + copy_ keeps a strided view's layout, which is
    part of the tuning key; clone() would make it contiguous)."""
    s = torch.empty_strided(C.shape, C.stride(), dtype=C.dtype, device=C.device)
    return s.copy_(C)


def plan_prepare(name: str, plan_cls, deterministic: bool):
    """``prepare`` of a kernel whose launch is one planned object (split-K, stream-K): the
    arguments are checked, ``plan_cls(A, B, C, alpha, beta, precision, deterministic, options)``
    is built once (decomposition, workspaces, operand copies) and the returned launch runs it.
    ``launch.config`` is the plan's config dict, which the plan completes during the first launch
    where a tile is chosen then; ``launch.plan`` keeps the plan inspectable for tests."""
    def prepare(problem, inputs, options=None):
        A, B, C = inputs.A, inputs.B, inputs.C
        check_gemm_args(name, A, B, C, problem.alpha, problem.beta, problem.precision, PRECISIONS)
        plan = plan_cls(A, B, C, problem.alpha, problem.beta, problem.precision, deterministic, options)

        def launch():
            plan.launch()
        launch.config = plan.config
        launch.plan = plan
        return launch
    return prepare
