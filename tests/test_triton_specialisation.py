"""triton.stream_k's GEMM kernel does not specialise on its stream-K bookkeeping ints: two launches
that differ only in such a value (here SK_TILES 1 against 2, which Triton would otherwise make a
constant) compile to the same sm_90 PTX, so they share one compile. Compiled on the CPU in a
subprocess without TRITON_INTERPRET (the tests' conftest sets it)."""
from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = """
from reproduce import stream_k_study as study
from triton_kernels.stream_k_kernels import NOT_SPECIALISED, _stream_k_kernel
assert [p.name for p in _stream_k_kernel.params if p.do_not_specialize] == list(NOT_SPECIALISED)
specs = [s for s in study.launch_specs(593, 6733, 3703, "fp32", 1.0, 0.0, True, {}) if s[0] is _stream_k_kernel]
fn, args, ce, w, st = specs[0]
assert args["SK_TILES"] == 1, args["SK_TILES"]     # the case: a value Triton would make a constant
one = study.compile_sm90(fn, args, ce, w, st).asm["ptx"]
two = study.compile_sm90(fn, dict(args, SK_TILES=2, SK_Q=args["SK_Q"] + 16), ce, w, st).asm["ptx"]
print("same" if one.split(".entry")[1] == two.split(".entry")[1] else "different")
"""


def test_bookkeeping_ints_share_one_compile():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=dict(env, PYTHONPATH=REPO), cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "same"


def test_judge_tiles_reads_the_heuristics_pick_from_measured_variants(tmp_path):
    from reproduce import stream_k_study
    rows = tmp_path / "rows.csv"
    head = "precision,shape,M,N,K,kernel,status,median_ms,pct_cublas,tile,decomposition,rel_err\n"
    body = ("fp32,800x2400x4500,800,2400,4500,triton.stream_k,ok,1,50.0,128x128x16,sk,0\n"
            "fp32,800x2400x4500,800,2400,4500,triton.stream_k[tile=64x64x32/4/4],ok,1,90.0,64x64x32,dp,0\n"
            "fp32,800x2400x4500,800,2400,4500,triton.stream_k[tile=64x128x16/4/4],ok,1,95.0,64x128x16,dp,0\n"
            "tf32,9x9x9,9,9,9,triton.stream_k[tile=64x64x32/4/4],ok,1,90.0,64x64x32,dp,0\n")
    rows.write_text(head + body)
    text = "\n".join(stream_k_study.judge_tiles(str(rows)))
    # this checkout picks 64x64x32 data-parallel there: its row, not the better one it didn't pick
    assert [ln.split()[0] for ln in text.splitlines() if "geomean   50.0 ->   90.0" in ln] == ["fp32", "fp32"]
    assert "not measured (the pick has no row): tf32 9x9x9" in text


def test_judge_tiles_takes_the_gemv_row_for_a_single_row(tmp_path):
    """M = 1: this checkout's pick is the GEMV (its tile by B's alignment), tf32x3 reads fp32's
    row through tf32x3_split=ffma and tf32 its own GEMV row (TF32_ON_GEMV_PATH); a stale
    tile-GEMM pick would read 80 / 70 / 75, or find no row for tf32."""
    from reproduce import stream_k_study
    rows = tmp_path / "rows.csv"
    head = "precision,shape,M,N,K,kernel,status,median_ms,pct_cublas,tile,decomposition,rel_err\n"
    body = ("fp32,1x4096x8192,1,4096,8192,triton.stream_k,ok,1,80.0,16x128x32,sk,0\n"
            "fp32,1x4096x8192,1,4096,8192,triton.stream_k[tile=16x128x32/4/3],ok,1,80.0,16x128x32,sk,0\n"
            "fp32,1x4096x8192,1,4096,8192,triton.stream_k[gemv_tile=1x64x128/4/1],ok,1,104.0,1x64x128,gemv,0\n"
            "tf32x3,1x4096x8192,1,4096,8192,triton.stream_k,ok,1,70.0,16x128x32,sk,0\n"
            "tf32,1x4096x8192,1,4096,8192,triton.stream_k,ok,1,75.0,16x128x32,hybrid,0\n"
            "tf32,1x4096x8192,1,4096,8192,triton.stream_k[mode=gemv],ok,1,90.0,1x64x128,gemv,0\n")
    rows.write_text(head + body)
    text = "\n".join(stream_k_study.judge_tiles(str(rows)))
    assert "geomean   80.0 ->  104.0" in text and "geomean   70.0 ->  104.0" in text, text
    assert "geomean   75.0 ->   90.0" in text, text
    assert "not measured" not in text
