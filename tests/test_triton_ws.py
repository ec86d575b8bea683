"""Triton stream_k's tf32 path on Hopper (mode=ws, triton_kernels/stream_k_gluon.py): the rule
that takes it and its tile, the option refusals, the kernel compiled for sm_90 without a GPU
(Gluon has no interpreter), and on an H100 the results against float64 on shapes that cut every
edge of the tiles."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from compare.harness.errors import UsageError
from compare.harness.problem import Problem
from compare.harness.runner import OK, run_kernel
from triton_kernels import stream_k as sk
from triton_kernels import stream_k_gluon as ws
from triton_kernels import stream_k_plan
from triton_kernels._common import interpreting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _plan(M, N, K, precision, device="cpu", **options):
    A, B, C = (torch.empty(M, K, device=device), torch.empty(K, N, device=device),
               torch.empty(M, N, device=device))
    return sk._Plan(A, B, C, 1.0, 0.0, precision, True, {"sms": 132, **options})


@pytest.fixture
def as_if_hopper(monkeypatch):
    """Plans made on CPU tensors as they would be on an H100 with a Triton that has Gluon (the
    plan is only resolved, never launched)."""
    monkeypatch.setattr(stream_k_plan, "ws_unsupported", lambda A, B, C: "")
    monkeypatch.setattr(ws, "ws_unsupported", lambda A, B, C: "")


# Tunable shapes behind the rule (results/h100/tf32-ws/): the tile it takes, or None where
# stream_k keeps its tile GEMM (few rows, or a grid that fills too little of a wave). 257x132x68
# is a small problem whose K is too short to split (results/h100/tf32-ws/round1: 90.7% with
# mode=ws, 77.3% on the tile GEMM).
RULE = [((960, 8192, 8192), "128x256x32"), ((4096, 4096, 4096), "128x256x32"), ((1000, 1004, 996), "128x128x32"),
        ((128, 4096, 11008), None), ((64, 8192, 28672), None), ((257, 132, 68), "128x128x32"),
        ((200, 200, 4096), None), ((8192, 8192, 8192), None), ((6144, 6144, 6144), None), ((8192, 16, 8192), None),
        ((4096, 64, 4096), "128x128x32")]


def _ids(v):
    return "x".join(map(str, v)) if isinstance(v, tuple) else str(v)


@pytest.mark.parametrize("shape,want", RULE, ids=_ids)
def test_ws_rule(as_if_hopper, shape, want):
    c = _plan(*shape, "tf32").config
    if want is None:
        assert c["decomposition"] in ("dp", "hybrid"), c
    else:
        assert c["decomposition"] == "ws" and c["tile"] == want and "ws_tile" not in c["chosen_by"], c
        assert c["operand_copy_bytes"] == 0
        assert c["wave_fill"] >= ws.WS_MIN_FILL or (shape[2] <= 2048 and shape[0] * shape[1] <= 8 * 2**20)


# Small problems (K <= 2048, M*N <= 8M; results/h100/tf32-small/, tune_small): mode=ws from 65 rows
# and 8 tiles of 128x128 up (under 8, where K can be split in two ranges of 16 K-tiles: the tile
# GEMM), however little of a wave the grid fills and
# past WS_MAX_M rows, split into K ranges of at least 16 K-tiles where the estimate says so;
# outside the class the rule above.
SMALL = [((768, 768, 768), 1), ((640, 640, 2048), 4), ((384, 384, 2048), 4), ((96, 4096, 2048), 4),
         ((8192, 256, 1024), 1), ((6144, 1280, 160), 1), ((65, 1000, 1000), 1),
         ((400, 200, 1800), 3), ((64, 4096, 1024), None), ((3000, 3000, 1024), "rule"), ((200, 200, 4096), None),
         ((4096, 32, 1024), None), ((256, 256, 2048), None), ((256, 384, 2048), None), ((128, 512, 2048), None),
         ((257, 132, 992), 1), ((257, 132, 993), None)]


@pytest.mark.parametrize("shape,splits", SMALL, ids=_ids)
def test_ws_small_problems(as_if_hopper, shape, splits):
    M, N, K = shape
    c = _plan(*shape, "tf32").config
    if splits is None:
        assert c["decomposition"] in ("dp", "hybrid"), c
    elif splits == "rule":      # 9M outputs: not small, so the fill rule decides (here it fills)
        assert c["decomposition"] == "ws" and c["wave_fill"] >= ws.WS_MIN_FILL, c
    else:
        assert c["decomposition"] == "ws" and c["k_splits"] == splits, c
        assert c["k_tiles_per_split"] >= 16 or splits == 1
    # Written out, not through the module's helper: K <= 2048 and M*N <= 8M.
    assert ws.small_problem(M, N, K) == (K <= 2048 and M * N <= 8388608)


def test_ws_split_pays_its_launch():
    """A split adds the sum kernel's launch to the estimate: 1024^3 in 2 ranges measured 22.0 us
    against 21.0 whole (results/h100/tf32-small/), so the default keeps whole K there."""
    t = ws.WS_TILE_SMALL
    one, two = ws.ws_seconds(1024, 1024, 1024, t, 1, 132), ws.ws_seconds(1024, 1024, 1024, t, 2, 132)
    # whole K: 1024 k x 16.4 ns (k_seconds); two ranges: half that, plus the partials' 5 words
    # per output element at 2.5 TB/s and the launch
    assert one == pytest.approx(1024 * t.k_seconds)
    assert two == pytest.approx(512 * t.k_seconds + 5 * 4 * 1024 * 1024 / 2.5e12 + 4e-6)
    assert ws.default_ws_plan(1024, 1024, 1024, 132)[1] == 1


def test_ws_plan_is_the_least_estimate():
    """default_ws_plan's (tile, splits) is the minimum of ws_seconds (decompose's split-K model)
    over both tiles and the allowed split counts; full waves keep whole K (no partials to sum)."""
    for M, N, K in [(960, 8192, 8192), (4096, 4096, 4096), (810, 5120, 13824), (1000, 1004, 996), (300, 300, 70000)]:
        tile, splits = ws.default_ws_plan(M, N, K, 132)
        est = ws.ws_seconds(M, N, K, tile, splits, 132)
        for t in ws.WS_TILES.values():
            most = ws.WS_MAX_SPLITS_FEW_TILES if ws._tiles(M, N, t) * ws.WS_MAX_SPLITS < 66 else ws.WS_MAX_SPLITS
            for s in range(1, min(most, max(1, K // (ws.WS_MIN_SPLIT_KT * t.bk))) + 1):
                assert est <= ws.ws_seconds(M, N, K, t, s, 132) + 1e-12, (M, N, K, t, s)
    assert ws.default_ws_plan(4096, 4096, 4096, 132) == (ws.WS_TILE, 1)
    assert ws.default_ws_plan(1000, 1004, 996, 132)[1] == 1        # 32 K-tiles: too short to split
    assert ws.default_ws_plan(4096, 4096, 4096, 132, tile=ws.WS_TILE_SMALL, splits=3) == (ws.WS_TILE_SMALL, 3)
    # Few tiles and long K (results/h100/tf32-ws/round3): more than WS_MAX_SPLITS ranges, one wave.
    tile, splits = ws.default_ws_plan(384, 384, 65536, 132)
    assert splits > ws.WS_MAX_SPLITS and ws._tiles(384, 384, tile) * splits <= 132
    # Enough tiles: at most WS_MAX_SPLITS however long K is.
    assert ws.default_ws_plan(1024, 1024, 262144, 132)[1] <= ws.WS_MAX_SPLITS


def test_ws_split_config(as_if_hopper):
    """K ranges of whole K-tiles; a split count above the K-tiles drops to what they need."""
    c = _plan(960, 1024, 1000, "tf32", ws_splits=3).config    # 32 K-tiles -> 11, 11, 10
    assert (c["k_splits"], c["k_tiles_per_split"], c["grid"]) == (3, 11, c["tiles"] * 3)
    assert c["fixup"].startswith("workspace")
    c = _plan(960, 1024, 40, "tf32", ws_splits=8).config      # 2 K-tiles
    assert (c["k_splits"], c["k_tiles_per_split"]) == (2, 1)
    assert _plan(960, 1024, 1000, "tf32", mode="ws").config["fixup"] == "none"
    A, B, C = torch.empty(960, 1000), torch.empty(1000, 1024), torch.empty(960, 1024)
    with_beta = sk._Plan(A, B, C, 1.0, 0.5, "tf32", True, {"sms": 132, "mode": "ws", "ws_splits": 1}).config
    assert with_beta["k_splits"] == 1 and with_beta["fixup"] == "workspace + sum kernel (beta * C)"


@pytest.mark.skipif(not interpreting(), reason="needs TRITON_INTERPRET=1 (set by conftest without a GPU)")
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.5, -1.5)])
def test_ws_sum_kernel_adds_the_ranges_in_order(alpha, beta):
    """The partials' sum (plain Triton, so the interpreter runs it): alpha * (W[0] + W[1] + ...)
    + beta * C over a grid with edge blocks, C a view with a row stride wider than N."""
    torch.manual_seed(0)
    S, M, N = 3, 45, 150
    W = torch.randn(S, M, N)
    C0 = torch.randn(M, N + 6)[:, :N]
    C = C0.clone()
    grid = (-(-M // ws.SUM_BLOCK_M), -(-N // ws.SUM_BLOCK_N))
    ws._range_sum_kernel[grid](W, C, M, N, M * N, C.stride(0), C.stride(1), alpha, beta, S, HAS_BETA=beta != 0,
                               BLOCK_M=ws.SUM_BLOCK_M, BLOCK_N=ws.SUM_BLOCK_N)
    want = alpha * ((W[0] + W[1]) + W[2]) + (beta * C0 if beta else 0)
    assert torch.allclose(C, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("precision,options", [
    ("fp32", {}), ("tf32x3", {}),                       # the Gluon kernel is tf32 only
    ("tf32", {"tile": "128x128x32"}), ("tf32", {"operands": "copy"}), ("tf32", {"b_transpose": "copy"}),
    ("tf32", {"mode": "hybrid"}),
])
def test_ws_not_taken(as_if_hopper, precision, options):
    assert _plan(960, 8192, 8192, precision, **options).config["decomposition"] != "ws"


def test_ws_tile_option_implies_the_mode(as_if_hopper):
    c = _plan(4096, 4096, 4096, "tf32", ws_tile="128x128").config
    assert c["decomposition"] == "ws" and c["tile"] == "128x128x32" and c["chosen_by"].startswith("user (sms, ws_tile)")
    c = _plan(128, 64, 64, "tf32", mode="ws").config       # forced where the rule would not take it
    assert c["decomposition"] == "ws" and c["tile"] == ws.default_ws_plan(128, 64, 64, 132)[0].dims


@pytest.mark.parametrize("precision,options,message", [
    ("fp32", {"mode": "ws"}, "applies to tf32, not fp32"),
    ("tf32x3", {"ws_tile": "128x128"}, "applies to tf32, not tf32x3"),
    ("tf32", {"ws_tile": "128x128", "mode": "dp"}, "contradict"),
    ("tf32", {"mode": "ws", "grid": 4}, "contradict"),
    ("tf32", {"mode": "ws", "operands": "copy"}, "contradict"),
    ("tf32", {"mode": "ws", "tile": "128x128x32"}, "takes ws_tile"),
])
def test_ws_refusals(as_if_hopper, precision, options, message):
    with pytest.raises(UsageError, match=message):
        _plan(960, 1024, 1024, precision, **options)


def test_ws_refused_off_the_gpu():
    """CPU tensors (or the interpreter): mode=ws says why it can't run, and the heuristic never
    takes it."""
    with pytest.raises(UsageError, match="GPU only|no Gluon"):
        _plan(960, 1024, 1024, "tf32", mode="ws")
    assert _plan(960, 8192, 8192, "tf32").config["decomposition"] != "ws"


@pytest.mark.parametrize("text", ["256x128", "128x64", "64", "128x256x64"])
def test_ws_tile_parse_refuses(text):
    with pytest.raises(ValueError):
        ws.parse_ws_tile(text)


def test_ws_tile_parse():
    assert ws.parse_ws_tile("128x256") is ws.WS_TILE
    assert ws.parse_ws_tile("128x128x32") is ws.WS_TILE_SMALL


def test_ws_kernel_compiles_without_wgmma_serialisation():
    """Both tiles compiled for sm_90 (``stream_k_study --ws-ir``): every wgmma takes B^T from
    registers, A and B come by TMA, no ptxas C75xx note (the unspecialised Gluon kernel of
    docs/examples/tf32_gluon_swap.py gets C7513), each consumer arrives once per K-tile, the
    register budgets are the plan's, and the ring fits an SM's 227 KiB."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--ws-ir"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout[out.stdout.index("{"):])
    assert set(got) == {n + s for n in ws.WS_TILES for s in ("", " split")}, got
    for name, c in got.items():
        assert c["wgmma"] > 0 and c["wgmma with A from registers"] == c["wgmma"] and c["tma copies"] > 0, c
        assert c["ptxas serialisation"] == "none", c
        # 152-168 bytes for the 128x128 split build, none otherwise; an epilogue that held C's
        # tile beside the accumulator (beta * C in the kernel) spilled 3.5 KB with Triton 3.6.
        assert c["spill bytes"] <= 256, c
        assert {ws.WS_CONSUMER_REGS, ws.WS_PRODUCER_REGS} <= set(c["setmaxnreg"]), c
        assert c["empty-slot arrivals"] == 2, c      # one per consumer partition
        assert c["shared bytes"] <= 227 * 1024, c


# --- on the GPU -------------------------------------------------------------------------------

def _row(problem, **options):
    parsed = sk.KERNEL.parse_options({k: str(v) for k, v in options.items()})
    r = run_kernel(sk.KERNEL, problem, timing=False, device="cuda", options=parsed)
    assert r.status == OK, f"{problem} {options}: {r.status_text}"
    return r


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


hopper = pytest.mark.skipif(not _hopper(), reason="mode=ws needs an sm_90 GPU")


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("tile", sorted(ws.WS_TILES))
@pytest.mark.parametrize("shape", [(129, 260, 100), (300, 4100, 1028), (1000, 1004, 996), (200, 256, 4),
                                   (2048, 2048, 2048), (130, 132, 36)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.5, -1.5)])
@pytest.mark.parametrize("splits", [1, 3])
def test_gpu_ws_shapes(tile, shape, alpha, beta, splits):
    """Rows, columns and K not multiples of the tile (N % 8 != 0 where N % 4 == 0), K under one
    K-tile, whole K and three K ranges (fewer where K has fewer K-tiles), against float64 with the
    NaN-poisoned C of the harness's check."""
    r = _row(Problem(*shape, precision="tf32", alpha=alpha, beta=beta), ws_tile=tile, ws_splits=splits)
    assert r.config["decomposition"] == "ws" and r.config["tile"] == tile
    kt = -(-shape[2] // 32)
    assert r.config["k_splits"] == -(-kt // -(-kt // min(splits, kt)))    # equal ranges: 4 K-tiles in 3 -> 2 of 2


@pytest.mark.gpu
@hopper
def test_gpu_ws_heuristic_and_fallbacks():
    assert _row(Problem(960, 2048, 4096, precision="tf32")).config["decomposition"] == "ws"
    # N % 4 != 0: B's rows are not 16-byte aligned, so TMA can't read it: the tile GEMM, and a
    # forced mode=ws says why.
    assert _row(Problem(960, 2047, 4096, precision="tf32")).config["decomposition"] != "ws"
    with pytest.raises(UsageError, match="16-byte"):
        _plan(960, 2047, 4096, "tf32", device="cuda", mode="ws")


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("shape,splits", [((96, 4100, 2048), 4), ((6200, 260, 160), 1), ((65, 1000, 1000), 1),
                                          ((643, 644, 2044), 3)], ids=_ids)
def test_gpu_ws_small_problems_by_default(shape, splits):
    """Small problems take mode=ws by default (96 rows, 6200 rows past WS_MAX_M, 3 and 4 K ranges,
    the last one short) and are right against float64 (run_kernel's check; NaN-poisoned C)."""
    c = _row(Problem(*shape, precision="tf32")).config
    assert c["decomposition"] == "ws" and c["k_splits"] == splits, c


@pytest.mark.gpu
@hopper
def test_gpu_ws_strided_views_and_bit_identical():
    """A and B as views into wider tensors (row strides multiples of 4), K in two ranges, three
    runs the same bits."""
    torch.manual_seed(0)
    A = torch.randn(700, 1032, device="cuda")[:, :1000]
    B = torch.randn(1000, 1540, device="cuda")[:, 4:1504]
    outs = []
    for _ in range(3):
        C = torch.full((700, 1500), float("nan"), device="cuda")
        sk.stream_k_matmul(A, B, C, precision="tf32", mode="ws", ws_splits=2)
        outs.append(C)
    ref = A.double() @ B.double()
    err = ((outs[0].double() - ref).norm() / ref.norm()).item()
    assert err < 1e-3, err
    assert all(torch.equal(outs[0], o) for o in outs[1:])
