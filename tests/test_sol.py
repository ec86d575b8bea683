"""Speed of light per row (compare/harness/sol.py) and where it shows: every figure computed here by
hand from M, N, K, beta and the peaks, never through the module's own helpers. The formula (beta,
each precision, bytes, the bound switch, clock scaling, the flag), the row fields in JSON/CSV and
--from-json, the table's one column within 120 columns, --interpret at 80 columns keeping rel err,
the sweep summary within 120 columns with its % SOL block (cuBLAS too), the matrix column, and the
roofline (matplotlib Agg) with its roofs and points. On a GPU (marker ``gpu``): no ladder row at
4096^3 reads above 100% of SOL."""
from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys

import pytest

from compare.harness import sol
from compare.harness.runner import Result, fill_pct_cublas
from compare.outputs import matrix, report, sweep

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Round numbers so the expected times are easy by hand: FFMA 50 TFLOP/s and TF32 400 TFLOP/s at
# 2000 MHz, DRAM 2000 GB/s.
PEAKS = {"fp32": {"tflops": 50.0, "sm_mhz": 2000, "noise": 0.02},
         "tf32": {"tflops": 400.0, "sm_mhz": 2000, "noise": 0.03},
         "dram": {"gbps": 2000.0, "noise": 0.01},
         "datasheet": {"name": "H100 SXM", "fp32_tflops": 66.9, "tf32_tflops": 494.7, "dram_gbps": 3350.0}}


def _row(M, N, K, precision="fp32", beta=0.0, ms=1.0, clock=2000, kernel="k", family="cuda", noise=0.0):
    r = Result(kernel=kernel, family=family, stage="s", group="g", variant="", shape=f"{M}x{N}x{K}", M=M, N=N, K=K,
               precision=precision, alpha=1.0, beta=beta, status="ok")
    r.median_ms, r.iqr_ms, r.sm_clock_mhz, r.noise, r.rel_err = ms, 0.001, clock, noise, 1e-7
    r.tflops = 2 * M * N * K / (ms * 1e-3) / 1e12
    return r


# --------------------------------------------------------------------------------------- formula

def test_flops_and_bytes_by_hand_with_and_without_beta():
    # 4096^3, beta = 0: 2 * 4096^3 = 137438953472 FLOPs; A, B, C: 3 * 4096^2 * 4 = 201326592 bytes
    assert sol.flops(4096, 4096, 4096, 0.0) == 137438953472
    assert sol.min_bytes(4096, 4096, 4096, 0.0) == 201326592
    # beta != 0: + 2 * 4096^2 = 33554432 FLOPs (beta C and the add); + 4096^2 * 4 = 67108864 bytes (C read)
    assert sol.flops(4096, 4096, 4096, 0.5) == 137438953472 + 33554432
    assert sol.min_bytes(4096, 4096, 4096, 0.5) == 201326592 + 67108864
    # a non-square one: M=100, N=8, K=3000 -> A 300000, B 24000, C 800 elements
    assert sol.min_bytes(100, 8, 3000, 0.0) == 4 * (300000 + 24000 + 800)
    assert sol.min_bytes(100, 8, 3000, -1.0) == 4 * (300000 + 24000 + 800 + 800)
    assert sol.flops(100, 8, 3000, -1.0) == 2 * 100 * 8 * 3000 + 2 * 800


def test_each_precision_uses_its_pipe_and_tf32x3_counts_three_products():
    # 4096^3 at beta 0: FLOPs 137438953472, bytes 201326592 -> memory time 201326592 / 2e12 = 100.66 us
    f = 137438953472
    fp32 = sol.speed_of_light(4096, 4096, 4096, "fp32", 0.0, PEAKS, 2000)
    tf32 = sol.speed_of_light(4096, 4096, 4096, "tf32", 0.0, PEAKS, 2000)
    x3 = sol.speed_of_light(4096, 4096, 4096, "tf32x3", 0.0, PEAKS, 2000)
    assert fp32.compute_s == pytest.approx(f / 50e12)          # 2.749 ms on FFMA
    assert tf32.compute_s == pytest.approx(f / 400e12)         # 0.344 ms on the tensor core
    assert x3.compute_s == pytest.approx(3 * f / 400e12)       # three TF32 products: 1.031 ms
    for s in (fp32, tf32, x3):
        assert s.memory_s == pytest.approx(201326592 / 2000e9)
        assert s.bound == "compute" and s.sol_s == s.compute_s
        assert s.intensity == pytest.approx(f / 201326592)     # 682.7 FLOP/B


def test_beta_term_runs_on_the_ffma_pipe():
    s = sol.speed_of_light(4096, 4096, 4096, "tf32", 1.0, PEAKS, 2000)
    assert s.compute_s == pytest.approx(137438953472 / 400e12 + 33554432 / 50e12)
    assert s.memory_s == pytest.approx((201326592 + 67108864) / 2000e9)


def test_bound_switches_from_memory_to_compute_at_the_ridge():
    # FFMA 50 TFLOP/s over 2000 GB/s: ridge at 25 FLOP/B. A square GEMM of side n has intensity
    # 2n^3 / (12 n^2) = n / 6: memory-bound below n = 150, compute-bound above.
    low = sol.speed_of_light(144, 144, 144, "fp32", 0.0, PEAKS, 2000)      # 24 FLOP/B
    high = sol.speed_of_light(156, 156, 156, "fp32", 0.0, PEAKS, 2000)     # 26 FLOP/B
    assert low.intensity == pytest.approx(24.0) and low.bound == "memory"
    assert low.sol_s == pytest.approx(12 * 144 ** 2 / 2000e9)
    assert high.intensity == pytest.approx(26.0) and high.bound == "compute"
    assert high.sol_s == pytest.approx(2 * 156 ** 3 / 50e12)
    # a matrix times a vector: K N + ... 8192 x 1 x 8192: 2 * 8192^2 FLOPs over 4 (8192^2 + 2 * 8192) bytes
    gemv = sol.speed_of_light(8192, 1, 8192, "fp32", 0.0, PEAKS, 2000)
    assert gemv.bound == "memory" and gemv.sol_s == pytest.approx(4 * (8192 ** 2 + 2 * 8192) / 2000e9)


def test_peaks_scale_with_the_rows_clock_but_bandwidth_does_not():
    full = sol.speed_of_light(4096, 4096, 4096, "fp32", 0.0, PEAKS, 2000)
    capped = sol.speed_of_light(4096, 4096, 4096, "fp32", 0.0, PEAKS, 1500)   # a power-capped row
    assert capped.compute_s == pytest.approx(137438953472 / (50e12 * 1500 / 2000))
    assert capped.compute_s == pytest.approx(full.compute_s * 4 / 3)
    gemv_full = sol.speed_of_light(8192, 1, 8192, "fp32", 0.0, PEAKS, 2000)
    gemv_slow = sol.speed_of_light(8192, 1, 8192, "fp32", 0.0, PEAKS, 1000)
    assert gemv_slow.memory_s == gemv_full.memory_s
    # no clock recorded: the peak as measured
    assert sol.speed_of_light(4096, 4096, 4096, "fp32", 0.0, PEAKS, None).compute_s == pytest.approx(full.compute_s)


def test_no_peaks_no_sol():
    assert sol.speed_of_light(64, 64, 64, "fp32", 0.0, None, 2000) is None
    assert sol.speed_of_light(64, 64, 64, "fp32", 0.0, {"fp32": PEAKS["fp32"]}, 2000) is None


def test_fill_sets_every_field_and_flags_above_100_percent_plus_noise():
    # 4096^3 fp32 on FFMA: SOL 137438953472 / 50e12 = 2.74878 ms
    ok = _row(4096, 4096, 4096, ms=3.6651)
    within = _row(4096, 4096, 4096, ms=2.74878 / 1.015)          # 101.5%: inside the 2% FFMA noise
    above = _row(4096, 4096, 4096, ms=2.74878 / 1.05)            # 105%: outside 2% + 0 row noise
    noisy = _row(4096, 4096, 4096, ms=2.74878 / 1.05, noise=0.04)   # 105% with 4% row noise: inside 6%
    failed = _row(4096, 4096, 4096)
    failed.status, failed.median_ms = "FAILED", None
    rows = [ok, within, above, noisy, failed]
    sol.fill(rows, PEAKS)
    assert ok.flops == 137438953472 and ok.min_bytes == 201326592
    assert ok.intensity == pytest.approx(137438953472 / 201326592)
    assert ok.sol_ms == pytest.approx(2.748779, rel=1e-6) and ok.bound == "compute"
    assert ok.pct_sol == pytest.approx(100 * 2.748779 / 3.6651, rel=1e-5)          # 75.0%
    assert ok.gbps == pytest.approx(201326592 / 3.6651e-3 / 1e9)                  # 54.9 GB/s
    assert not ok.sol_flag and not within.sol_flag and not noisy.sol_flag
    assert above.sol_flag.startswith("105% of SOL is above 100% + 2.0% noise")
    assert failed.pct_sol is None and failed.gbps is None and failed.flops == 137438953472
    assert sol.cell(ok.pct_sol, ok.bound, ok.sol_flag) == "75c"
    assert sol.cell(above.pct_sol, above.bound, above.sol_flag) == "105c!"
    assert sol.cell(None, "", "") == "-"


def test_the_noise_floor_is_one_percent():
    quiet = dict(PEAKS, fp32=dict(PEAKS["fp32"], noise=0.0))
    r = _row(4096, 4096, 4096, ms=2.74878 / 1.009)   # 100.9%: under the 1% floor
    s = _row(4096, 4096, 4096, ms=2.74878 / 1.012)   # 101.2%: over it
    sol.fill([r, s], quiet)
    assert not r.sol_flag and s.sol_flag


# ------------------------------------------------------------------------------- JSON / CSV / load

def test_fields_are_in_json_and_csv_and_from_json_recomputes(tmp_path):
    rows = [_row(4096, 4096, 4096, ms=3.6651, kernel="cublas", family="cublas"), _row(4096, 4096, 4096, ms=5.0)]
    fill_pct_cublas(rows)
    sol.fill(rows, PEAKS)
    doc = json.loads(report.to_json(rows, {"gpu": "x", "peaks": PEAKS}))
    got = doc["results"][1]
    for k in ("flops", "min_bytes", "intensity", "gbps", "sol_ms", "pct_sol", "bound", "sol_flag"):
        assert k in got, k
    assert got["pct_sol"] == pytest.approx(100 * 2.748779 / 5.0, rel=1e-5) and got["bound"] == "compute"
    # --from-json recomputes against the file's peaks: doubled peaks halve the SOL time
    doc["environment"]["peaks"] = dict(PEAKS, fp32=dict(PEAKS["fp32"], tflops=100.0))
    (tmp_path / "r.json").write_text(json.dumps(doc))
    loaded, env = report.load(str(tmp_path / "r.json"))
    assert loaded[1].pct_sol == pytest.approx(100 * 1.3743895 / 5.0, rel=1e-5)
    # a CSV has no environment: its % SOL is kept as written
    (tmp_path / "r.csv").write_text(report.to_csv(rows))
    back, _ = report.load(str(tmp_path / "r.csv"))
    assert back[1].pct_sol == pytest.approx(rows[1].pct_sol) and back[1].bound == "compute"
    assert back[1].flops == 137438953472 and isinstance(back[1].min_bytes, int)


# -------------------------------------------------------------------------------------- rendering

LADDER = ["cuda.01_naive", "triton.naive_blocked", "cuda.02_coalesced", "cuda.07_bank_conflict_free",
          "cuda.10_split_k_atomic", "triton.stream_k_atomic", "cuda.11_stream_k_atomic", "cuda.13_wgmma_tma"]


def _ladder(shape=(4096, 4096, 4096), precision="fp32"):
    rows = [_row(*shape, precision=precision, ms=3.6651, kernel="cublas", family="cublas")]
    for i, k in enumerate(LADDER):
        r = _row(*shape, precision=precision, ms=3.6651 * (1 + i), kernel=k, family=k.split(".")[0])
        r.pct_peak = 55.0
        rows.append(r)
    return rows


def test_table_has_one_sol_column_within_120_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    rows = _ladder(precision="tf32x3") + _ladder(shape=(11008, 4096, 14336))
    rows[3].status, rows[3].reason, rows[3].median_ms = "unsupported", "fp32 only: a long reason text here", None
    fill_pct_cublas(rows)
    sol.fill(rows, PEAKS)
    rows[5].sol_flag = "x"
    buf = io.StringIO()
    report.to_table(rows, {"gpu": "NVIDIA H100 80GB HBM3", "sm_count": 132, "peaks": PEAKS,
                           "fp32_peak_tflops": 66.9, "sm_clock_mhz": 1980}, buf)
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 120, text
    header = next(line for line in text.splitlines() if line.startswith("kernel"))
    # two precisions add the prec column: rel err gives way (it is in the JSON/CSV), % SOL stays
    assert header.count("% SOL") == 1 and "% cuBLAS" in header
    cublas = next(line for line in text.splitlines() if line.startswith("cublas") and "11008" in line)
    # 11008x4096x14336 fp32 at 3.6651 ms: 2 * 11008 * 4096 * 14336 / 50e12 = 25.857 ms of FFMA: 705% ...
    # so the cuBLAS row here reads far above 100% and shows its number, bound and nothing else
    assert f"{100 * 2 * 11008 * 4096 * 14336 / 50e12 / 3.6651e-3:.0f}c" in cublas
    assert "measured peaks: FFMA 50.0 TFLOP/s at 2000 MHz" in text and "DRAM copy 2000 GB/s" in text
    assert "% SOL: the speed of light" in text and "! above 100%" in text


def test_interpret_at_80_columns_keeps_rel_err():
    env = dict(os.environ, TRITON_INTERPRET="1", COLUMNS="80")
    p = subprocess.run([sys.executable, "-m", "compare", "--interpret", "--kernel", "triton.split_k", "-q"],
                       cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    header = next(line for line in p.stdout.splitlines() if line.startswith("kernel"))
    assert header.split() == ["kernel", "shape", "rel", "err", "status"], header
    assert max(len(line) for line in p.stdout.splitlines()) <= 80, p.stdout


def test_sweep_summary_fits_120_columns_with_a_sol_block_for_cublas_too():
    rows = []
    for shape in [(4096, 4096, 4096), (11008, 4096, 14336), (8192, 1, 8192), (28672, 8, 4096)]:
        rows += _ladder(shape=shape)
    fill_pct_cublas(rows)
    sol.fill(rows, PEAKS)
    summary = sweep.summarize(rows)
    text = sweep.render_summary(summary, "table")
    assert max(len(line) for line in text.splitlines()) <= 120, text
    assert [e["kernel"] for e in summary] == LADDER + ["cublas"]
    cub = summary[-1]
    assert cub["n_timed"] == 0 and cub["geomean_pct"] is None and cub["sol_n"] == 4
    # by hand: cuBLAS at 3.6651 ms; compute-bound 4096^3 and 11008x4096x14336, memory-bound the two GEMVs
    c = [100 * 2 * 4096 ** 3 / 50e12 / 3.6651e-3, 100 * 2 * 11008 * 4096 * 14336 / 50e12 / 3.6651e-3]
    m = [100 * 4 * (8192 * 8192 + 8192 + 8192) / 2000e9 / 3.6651e-3,
         100 * 4 * (28672 * 4096 + 4096 * 8 + 28672 * 8) / 2000e9 / 3.6651e-3]
    assert (cub["sol_compute_n"], cub["sol_memory_n"]) == (2, 2)
    assert cub["sol_compute_geomean_pct"] == pytest.approx(math.sqrt(c[0] * c[1]))
    assert cub["sol_memory_geomean_pct"] == pytest.approx(math.sqrt(m[0] * m[1]))
    assert cub["sol_memory_p50_pct"] == pytest.approx((m[0] + m[1]) / 2)
    assert cub["sol_geomean_pct"] == pytest.approx((c[0] * c[1] * m[0] * m[1]) ** 0.25)
    block = text[text.index("speed of light"):]
    assert any(line.startswith("cublas") for line in block.splitlines())
    # the % of cuBLAS block has no cuBLAS line
    head = text[:text.index("speed of light")]
    assert not any(line.startswith("cublas") for line in head.splitlines())
    csv_text = sweep.render_summary(summary, "csv")
    assert "sol_compute_geomean_pct" in csv_text.splitlines()[0]


def test_matrix_has_a_sol_column_cublas_included():
    rows = _ladder()
    fill_pct_cublas(rows)
    sol.fill(rows, PEAKS)
    text = matrix.render(rows, "table", 120)
    header = next(line for line in text.splitlines() if line.startswith("kernel"))
    assert header.split()[-2:] == ["%", "SOL"]
    cub = next(line for line in text.splitlines() if line.startswith("cublas"))
    assert cub.split()[-1] == f"{100 * 2.748779 / 3.6651:.0f}c"          # 75c
    second = next(line for line in text.splitlines() if line.startswith("triton.naive_blocked"))
    assert second.split()[-1] == "37c"        # twice cuBLAS's time: 100 * 2.748779 / 7.3302 = 37.499
    assert max(len(line) for line in text.splitlines()) <= 120


# --------------------------------------------------------------------------------------- roofline

def test_roofline_draws_roofs_points_and_cublas(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    from compare.outputs import plot as plotmod
    rows = _ladder() + _ladder(precision="tf32") + _ladder(shape=(8192, 1, 8192))
    fill_pct_cublas(rows)
    sol.fill(rows, PEAKS)
    kept = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    try:
        plotmod.plot(rows, str(tmp_path / "p.png"), gpu="NVIDIA H100 80GB HBM3",
                     env={"gpu": "NVIDIA H100 80GB HBM3", "peaks": PEAKS})
    finally:
        monkeypatch.setattr(plt, "close", real_close)
    fig = kept[0]
    ax = fig.axes[2]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.get_lines()]
    assert any(lab.startswith("memory roof: DRAM copy 2000 GB/s") for lab in labels)
    assert any(lab.startswith("FP32 FFMA roof 50.0 TFLOP/s (ridge 25 FLOP/B)") for lab in labels)
    assert any(lab.startswith("TF32 tensor core roof 400.0 TFLOP/s (ridge 200 FLOP/B)") for lab in labels)
    # one point per timed row, at its intensity and FLOPs / time
    points = [(c.get_offsets()[0][0], c.get_offsets()[0][1]) for c in ax.collections if len(c.get_offsets())]
    assert len(points) == len(rows)
    assert (pytest.approx(2 * 4096 ** 3 / (12 * 4096 ** 2)), pytest.approx(2 * 4096 ** 3 / 3.6651e-3 / 1e12)) in points
    stars = [c for c in ax.collections if c.get_label().startswith("cublas")]
    assert stars, "cuBLAS is not marked"
    title = ax.get_title()
    assert "NVIDIA H100 80GB HBM3" in title and "2000 MHz" in title and "FFMA 50.0" in title and "2000 GB/s" in title
    assert os.path.getsize(tmp_path / "p.png") > 0
    plt.close(fig)


def test_roofline_with_achieved_intensity_draws_hollow_points(tmp_path):
    pytest.importorskip("matplotlib")
    from compare.outputs import plot as plotmod
    rows = _ladder()
    pts = plotmod.roofline_points(rows)
    pts[1]["achieved_intensity"] = pts[1]["intensity"] / 10
    out = plotmod.plot_roofline(pts, str(tmp_path / "r.svg"), {"gpu": "g", "peaks": PEAKS})
    svg = open(out).read()
    assert "hollow: at the DRAM bytes Nsight Compute counted" in svg


# ----------------------------------------------------------------------------------- on a GPU

@pytest.mark.gpu
def test_no_ladder_row_reads_above_100_percent_of_sol(tmp_path):
    """The ladder at 4096^3 in fp32 and tf32 (and tf32x3), and the GEMV shapes, against the measured
    peaks: every row carries % SOL and none is flagged."""
    out = tmp_path / "ladder.json"
    p = subprocess.run([sys.executable, "-m", "compare", "--shape", "4096", "--shape", "8192x8x8192",
                        "--precision", "fp32,tf32,tf32x3",
                        "--format", "json", "-o", str(out), "-q"], cwd=REPO, capture_output=True, text=True, timeout=3000)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["environment"]["peaks"], "no measured peaks in the environment"
    ok = [r for r in doc["results"] if r["status"] == "ok"]
    assert ok and all(r["pct_sol"] is not None and r["bound"] in ("compute", "memory") for r in ok)
    flagged = [(r["kernel"], r["shape"], r["precision"], r["sol_flag"]) for r in ok if r["sol_flag"]]
    assert not flagged, flagged


# ------------------------------------------------------------------------- --profile's roofline

def test_profile_points_sit_at_the_dram_bytes_ncu_counted(tmp_path):
    """The recorded H100 profile at 2048^3 (tests/fixtures/ncu): each stage's achieved intensity is
    its FLOPs over dram__bytes_read.sum + dram__bytes_write.sum; --from-json --plot writes the
    roofline beside the bars."""
    pytest.importorskip("matplotlib")
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from test_profile import _rows as recorded
    from compare.outputs import profile as P
    rows = list(recorded().values())
    pts = {q["kernel"]: q for q in P.roofline_points(rows)}
    naive = next(r for r in rows if r["kernel"] == "cuda.01_naive")
    c = naive["counters"]
    by_hand = 2 * 2048 ** 3 / (c["dram_read"] + c["dram_write"])
    assert pts["cuda.01_naive"]["achieved_intensity"] == pytest.approx(by_hand, rel=1e-3)
    assert pts["cuda.01_naive"]["intensity"] == pytest.approx(2 * 2048 ** 3 / (12 * 2048 ** 2))
    assert "cublas" in pts and pts["cublas"]["cublas"]
    doc = tmp_path / "profile.json"
    doc.write_text(P.to_json(rows, {"gpu": "NVIDIA H100 80GB HBM3", "ncu_version": "x", "missing": [], "command": "x",
                                    "env": {"gpu": "NVIDIA H100 80GB HBM3", "peaks": PEAKS}}))
    png = tmp_path / "ladder.png"
    assert P.main(["--from-json", str(doc), "-o", str(tmp_path / "p.md"), "--plot", str(png)]) == 0
    assert png.stat().st_size > 0 and (tmp_path / "ladder-roofline.png").stat().st_size > 10_000


def test_sweep_plot_has_the_roofline_and_a_sol_cdf(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    rows = []
    for shape in [(4096, 4096, 4096), (8192, 1, 8192), (2048, 2048, 2048)]:
        rows += _ladder(shape=shape)
    fill_pct_cublas(rows)
    sol.fill(rows, PEAKS)
    kept = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    try:
        sweep.plot_sweep(rows, str(tmp_path / "s.png"), env={"gpu": "NVIDIA H100 80GB HBM3", "peaks": PEAKS})
    finally:
        monkeypatch.setattr(plt, "close", real_close)
    fig = next(f for f in kept if hasattr(f, "axes"))   # plot_sweep also calls close("all")
    roof, cdf = fig.axes[3], fig.axes[4]
    assert roof.get_title().startswith("Roofline: NVIDIA H100 80GB HBM3")
    assert len([c for c in roof.collections if len(c.get_offsets())]) == len(rows)
    steps = {line.get_label(): line for line in cdf.get_lines() if not line.get_label().startswith("_")}
    # cuBLAS's compute-bound rows: 4096^3 and 2048^3 at 3.6651 ms against FFMA 50 TFLOP/s, by hand
    g = math.sqrt(100 * 2 * 4096 ** 3 / 50e12 / 3.6651e-3 * 100 * 2 * 2048 ** 3 / 50e12 / 3.6651e-3)
    assert f"cublas [fp32] c geomean {g:.0f}%" in steps
    assert steps[f"cublas [fp32] c geomean {g:.0f}%"].get_linestyle() == "-"
    assert any(k.startswith("cublas [fp32] m geomean") and v.get_linestyle() == "--" for k, v in steps.items())
    plt.close(fig)


def test_sweep_summary_notes_wrap_at_120_columns():
    """Every note (the 'no timed rows' one is 150 characters) and every block stays within 120."""
    rows = _ladder(shape=(11008, 4096, 14336)) + _ladder(shape=(28672, 4096, 14336))
    rows[2].status, rows[2].median_ms = "FAILED", None
    fill_pct_cublas(rows)
    for r in rows:
        if r.kernel == "cuda.13_wgmma_tma":
            r.pct_cublas = None       # a kernel with no timed row: the long note
    sol.fill(rows, PEAKS)
    text = sweep.render_summary(sweep.summarize(rows), "table")
    assert "no timed rows" in text and "FAILED or error" in text
    assert max(len(line) for line in text.splitlines()) <= 120, text
