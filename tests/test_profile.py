"""python -m compare.outputs.profile: Nsight Compute counters beside the ladder's times.

CPU tests read a report recorded with ncu on an H100 (tests/fixtures/ncu/: the raw-page CSV
``ncu --import --csv --page raw`` printed and the child's manifest, both as the GPU run wrote
them) and drive the parent end to end through a stand-in ncu that replays that recording. The
GPU tests profile the CUDA ladder and check each stage's header claim on the counters.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from compare.outputs import profile as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "ncu")
RECORDED_CSV = os.path.join(FIXTURES, "ladder_2048_h100.csv")
RECORDED_MANIFEST = os.path.join(FIXTURES, "ladder_2048_h100.manifest.json")


# A second run, recorded after the shared-memory wavefront and tensor-pipe counters were added
# (it also holds the stream-K rows of a stage then being written).
RECORDED2 = os.path.join(FIXTURES, "ladder_2048_h100_wavefronts")


def _recording(base=None):
    csv_path, manifest_path = (RECORDED_CSV, RECORDED_MANIFEST) if base is None else \
        (base + ".csv", base + ".manifest.json")
    with open(csv_path) as f:
        kernels = P.parse_raw_csv(f.read())
    with open(manifest_path) as f:
        manifest = json.load(f)
    return manifest, kernels


def _rows(base=None):
    manifest, kernels = _recording(base)
    rows = P.build_rows(manifest, kernels)
    P.fill_metrics(rows)
    return {r["kernel"]: r for r in rows}


# --- reading a recorded report ---------------------------------------------------------------

def test_recorded_report_parses_into_one_window_per_launch():
    manifest, kernels = _recording()
    windows = P.split_windows(kernels)
    assert len(windows) == len([e for e in manifest["entries"] if e["profiled"]]) == 16
    # The Triton tiled kernel's launch is two kernels: the M-major copy of A and the GEMM; the
    # window catches both although neither name matches the other rows' names.
    rows = _rows()
    assert rows["triton.tiled"]["ncu_kernels"] == ["_transpose_kernel", "_tiled_kernel"]
    assert "sgemm" in rows["cublas"]["ncu_kernels"][0]
    assert rows["cuda.07_bank_conflict_free"]["ncu_kernels"][0].startswith("void sgemm_bank_conflict_free<")
    assert all(len(r["ncu_kernels"]) >= 1 for r in rows.values())


def test_recorded_counters_in_base_units():
    rows = _rows()
    c07 = rows["cuda.07_bank_conflict_free"]["counters"]
    assert c07["conflicts_st"] == 335129
    assert c07["conflicts_ld"] == 8055
    assert c07["regs"] == 109
    # gpu__time_duration in nanoseconds: the naive stage takes ~35 ms at 2048^3
    assert 30e6 < rows["cuda.01_naive"]["counters"]["time_ns"] < 40e6
    # the window's time is the sum of its kernels' (transpose + GEMM)
    manifest, kernels = _recording()
    t = [k["metrics"]["gpu__time_duration.sum"] for k in kernels if k["kernel_name"] in
         ("_transpose_kernel", "_tiled_kernel")]
    assert rows["triton.tiled"]["counters"]["time_ns"] == pytest.approx(sum(t))


def test_recorded_metrics_and_claims():
    rows = _rows()
    m = {k: r["metrics"] for k, r in rows.items()}
    # coalescing: a naive warp asks for 16.5 sectors per load, the coalesced one 2.5
    assert m["cuda.01_naive"]["sectors_per_req"] == pytest.approx(16.5, abs=0.01)
    assert m["cuda.02_coalesced"]["sectors_per_req"] == pytest.approx(2.5, abs=0.01)
    # float4 loads: 16 bytes per thread per load instruction from stage 06 on, 4 before
    assert m["cuda.05_blocktile_2d"]["load_width"] == pytest.approx(4.0, abs=0.05)
    assert m["cuda.06_vectorized"]["load_width"] == pytest.approx(16.0, abs=0.05)
    # the minimum DRAM traffic of 2048^3 with beta = 0 is 3 * 16 MiB
    assert P.min_dram_bytes(2048, 2048, 2048, 0.0) == 3 * 4 * 2048 * 2048
    assert P.min_dram_bytes(2048, 2048, 2048, 1.0) == 4 * 4 * 2048 * 2048
    verdict = {(k, c["metric"]): c["holds"] for k, r in rows.items() for c in r["claims"]}
    for kernel, metric in [("cuda.02_coalesced", "sectors_per_req"), ("cuda.03_smem_tiled", "ldg_mb"),
                           ("cuda.04_blocktile_1d", "fma_pct"), ("cuda.05_blocktile_2d", "fma_pct"),
                           ("cuda.06_vectorized", "load_width"), ("cuda.08_warptile", "fma_pct"),
                           ("cuda.09_double_buffered", "barrier_pct")]:
        assert verdict[(kernel, metric)] is True, (kernel, metric)
    # Triton and cuBLAS rows carry no CUDA stage claim
    assert rows["triton.tiled"]["claims"] == [] and rows["cublas"]["claims"] == []


def test_issue_slots_ffma_share_and_top_stalls():
    # 40 issue slots a cycle-window, 1/4 of warp instructions FFMA (ncu counts FFMAs per thread)
    c = {"issue_pct": 40.0, "inst": 1000.0, "ffma_thread_inst": 32 * 250.0,
         "stall_wait": 1.37, "stall_math_pipe_throttle": 0.79, "stall_long_scoreboard": 0.68,
         "stall_short_scoreboard": 0.58, "stall_barrier": 0.08}
    m = {x.key: x.value(c, {}) for x in P.METRICS if x.key in ("issue_pct", "ffma_share", "stalls")}
    assert m["issue_pct"] == 40.0 and m["ffma_share"] == pytest.approx(25.0)
    assert m["stalls"] == "wait 1.37, math_pipe_throttle 0.79, long_scoreboard 0.68"
    # an ncu without the counters: no numbers made up
    assert all(x.value({}, {}) is None for x in P.METRICS if x.key in ("issue_pct", "ffma_share", "stalls"))
    # each reason is read under ncu's own name
    names = {n for ctr in P.COUNTERS if ctr.key.startswith("stall_") for n in ctr.names}
    assert "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio" in names


def test_stage_07_store_conflicts_on_the_recording():
    """Stage 07's loads are conflict-free; its transposed-A store is not (7.4% of wavefronts), so
    its header now claims a cut from stage 06's 36.6%, not zero, and that corrected claim holds."""
    rows = _rows(RECORDED2)
    r07 = rows["cuda.07_bank_conflict_free"]
    assert r07["counters"]["conflicts_st"] == 335648
    claims = {c["metric"]: c for c in r07["claims"]}
    assert claims["conflicts_ld_pct"]["holds"] is True
    assert claims["conflicts_st_pct"]["holds"] is True
    assert claims["conflicts_st_pct"]["value"] == pytest.approx(7.41, abs=0.01)
    assert claims["conflicts_st_pct"]["value"] > 1.0        # not conflict-free: the old "~0" claim fails
    # stage 06, before the padding: 40% of load and 37% of store wavefronts were replays
    assert rows["cuda.06_vectorized"]["metrics"]["conflicts_ld_pct"] == pytest.approx(40.0, abs=0.1)
    assert rows["cuda.06_vectorized"]["metrics"]["conflicts_st_pct"] == pytest.approx(36.6, abs=0.1)
    # every other CUDA header claim holds on this run too
    failing = [(k, c["metric"]) for k, r in rows.items() for c in r["claims"] if c["holds"] is not True]
    assert failing == []


def test_bank_conflict_claims_use_wavefront_share():
    claim = next(c for c in P.claims() if c.metric == "conflicts_ld_pct")   # "~0": under 1%
    assert P.evaluate_claim(claim, 7.4, None) is False
    assert P.evaluate_claim(claim, 0.02, None) is True
    assert P.evaluate_claim(claim, None, None) is None
    store = next(c for c in P.claims() if c.metric == "conflicts_st_pct")   # "<" stage 06
    assert P.evaluate_claim(store, 7.4, 36.6) is True
    assert P.evaluate_claim(store, 40.0, 36.6) is False
    value = P.METRIC_BY_KEY["conflicts_st_pct"].value({"conflicts_st": 25, "wavefronts_st": 1000}, {})
    assert value == pytest.approx(2.5)


def test_windows_that_do_not_match_the_manifest_are_an_error():
    manifest, kernels = _recording()
    manifest = dict(manifest, entries=manifest["entries"][:-1])
    with pytest.raises(RuntimeError, match="16 profiled windows but the child opened 15"):
        P.build_rows(manifest, kernels)


def test_units_scaled_by_ncu_are_brought_back_to_base():
    text = textwrap.dedent('''\
        "ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","sm__warps_active.avg.pct_of_peak_sustained_active"
        "","","usecond","Kbyte","%"
        "0","gemm_ladder_profile_marker","1.5","2","10"
        "1","k","1,234.5","1,000","50.5"
        ''')
    ks = P.parse_raw_csv(text)
    assert ks[1]["metrics"]["gpu__time_duration.sum"] == pytest.approx(1234.5e3)
    assert ks[1]["metrics"]["dram__bytes_read.sum"] == pytest.approx(1e6)
    assert ks[1]["metrics"]["sm__warps_active.avg.pct_of_peak_sustained_active"] == pytest.approx(50.5)


def test_metrics_missing_from_this_ncu_fall_back_or_are_reported():
    chosen, missing = P.choose_metrics({"gpu__time_duration", "sm__pipe_tensor_op_hmma_cycles_active"})
    assert chosen["tensor_pct"].startswith("sm__pipe_tensor_op_hmma_cycles_active")
    assert chosen["regs"] == "launch__registers_per_thread"   # launch metrics are never listed
    assert "dram_read" in missing and "time_ns" not in missing
    assert P._unknown_metric("==ERROR== Failed to find metric sm__foo_bar.sum\n") == "sm__foo_bar.sum"


def test_every_output_format_renders_the_recording():
    rows = list(_rows().values())
    info = {"gpu": "NVIDIA H100 80GB HBM3", "ncu_version": "2025.3.1.0", "missing": [], "command": "x"}
    md = P.to_markdown(rows, info)
    assert "| cuda.02_coalesced |" in md and "holds: sect/req 2.50 < naive 16.50" in md
    assert all(f"**{m.header}**" in md for m in P.METRICS)          # the legend names every column
    table = P.to_table(rows, info)
    assert "legend:" in table and "cuda.09_double_buffered" in table
    csv_text = P.to_csv(rows)
    assert csv_text.count("\n") == len(rows) + 1
    data = json.loads(P.to_json(rows, info))
    assert len(data["rows"]) == len(rows) and set(data["legend"]) == {m.key for m in P.METRICS}


def test_plot_of_the_recording(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "ladder.png"
    P.plot(list(_rows().values()), str(path))
    assert path.stat().st_size > 10_000


# --- the parent without a usable ncu: one line, exit 2, nothing written ----------------------

def _run_profile(args, env_path, tmp_path):
    env = dict(os.environ, PATH=env_path, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "compare.outputs.profile", *args], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=600)


def test_no_ncu_on_path_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "out.json"
    empty = tmp_path / "bin"
    empty.mkdir()
    p = _run_profile(["--stage", "tiled", "--family", "cuda", "-o", str(out)], str(empty), tmp_path)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("warning:")]
    assert len(lines) == 1 and "ncu" in lines[0] and lines[0].startswith("error:"), p.stderr
    assert not out.exists()
    assert [f for f in os.listdir(tmp_path) if f != "bin"] == []


FAKE_NCU = r'''#!{python}
"""Stands in for ncu: replays a recorded report, or fails like a driver that forbids counters."""
import json, os, shutil, sys
args = sys.argv[1:]
mode = os.environ["FAKE_NCU_MODE"]
with open(os.environ["FAKE_NCU_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
if "--version" in args:
    print("Version 0.0 (fake)"); sys.exit(0)
if "--query-metrics" in args:
    sys.exit(0)                      # lists nothing: every first-choice name is requested
if "--import" in args:
    sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read()); sys.exit(0)
if mode == "perm":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
spec = json.load(open(args[-1]))     # the child's spec: answer with the recorded manifest
recorded = json.load(open(os.environ["FAKE_NCU_MANIFEST"]))
json.dump(dict(recorded, manifest=spec["manifest"]), open(spec["manifest"], "w"))
open(args[args.index("--export") + 1] + ".ncu-rep", "w").write("fake report")
'''


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    exe = bindir / "ncu"
    exe.write_text(FAKE_NCU.replace("{python}", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "ncu_calls.jsonl"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    monkeypatch.setenv("FAKE_NCU_CSV", RECORDED_CSV)
    monkeypatch.setenv("FAKE_NCU_MANIFEST", RECORDED_MANIFEST)
    import compare.harness.inputs
    monkeypatch.setattr(compare.harness.inputs, "gpu_available", lambda: True)   # the GPU check passes
    return str(exe), log


def test_counters_forbidden_is_one_line_and_exit_2(fake_ncu, tmp_path, monkeypatch, capsys):
    exe, _ = fake_ncu
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    out = tmp_path / "out.md"
    rc = P.main(["--stage", "tiled", "--family", "cuda", "--ncu", exe, "--no-time", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "ERR_NVGPUCTRPERM" in lines[0]
    assert not out.exists() and not any(f.startswith(".out.md") for f in os.listdir(tmp_path))


def test_parent_end_to_end_on_the_recording(fake_ncu, tmp_path, monkeypatch):
    exe, log = fake_ncu
    monkeypatch.setenv("FAKE_NCU_MODE", "replay")
    out = tmp_path / "profile.json"
    raw = tmp_path / "raw"
    raw.mkdir()
    # Select exactly the recording's launches (its manifest's kernels), so the windows line up.
    with open(RECORDED_MANIFEST) as f:
        names = [e["kernel"] for e in json.load(f)["entries"]]
    rc = P.main(["--stage", "all", "--shape", "2048", "--kernel", ",".join(names), "--ncu", exe, "--no-time",
                 "-o", str(out), "--raw-dir", str(raw)])
    assert rc == 0
    calls = [json.loads(ln) for ln in log.read_text().splitlines()]
    profile_call = next(c for c in calls if "--export" in c)
    # The profiled run: clocks left alone, only the windows the child opens, every counter asked for.
    assert profile_call[profile_call.index("--clock-control") + 1] == "none"
    assert profile_call[profile_call.index("--profile-from-start") + 1] == "off"
    metrics = profile_call[profile_call.index("--metrics") + 1].split(",")
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum" in metrics
    assert profile_call[-5:-1] == [sys.executable, "-m", "compare.outputs.profile", "--_child"]
    data = json.loads(out.read_text())
    assert [r["kernel"] for r in data["rows"]][:3] == ["cublas", "cuda.01_naive", "triton.naive_blocked"]
    assert sorted(os.listdir(raw)) == ["manifest.json", "profile.ncu-rep", "raw.csv"]
    # --from-json renders it again without ncu or a GPU
    md = tmp_path / "profile.md"
    assert P.main(["--from-json", str(out), "-o", str(md)]) == 0
    assert "cuda.07_bank_conflict_free" in md.read_text()


def test_plugins_reach_the_selection_and_the_process_under_ncu(monkeypatch, tmp_path, capsys):
    """--plugin, as python -m compare takes it (it hands --profile runs to this command): the
    parent loads the plugins before selecting kernels, the child's spec names every plugin this
    process loaded (a path made absolute: ncu may start the child elsewhere), and the child loads
    them before it prepares a launch. The registry is stubbed: a plugin loaded for real would stay
    registered for every later test of the session."""
    from compare.harness import registry
    calls = []

    class Stop(Exception):
        pass

    def load(specs):
        calls.append(list(specs or []))
        raise Stop
    monkeypatch.setattr(registry, "load_plugins", load)
    with pytest.raises(Stop):
        P.main(["--plugin", "docs/examples/my_kernel.py", "--plugin", "my_module", "--kernel", "my.blocked"])
    assert calls == [["docs/examples/my_kernel.py", "my_module"]]
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(registry, "loaded_plugins", lambda: ["docs/examples/my_kernel.py", "my_module"])
    spec = P.child_spec([], {}, "manifest.json", {}, [])
    assert spec["plugins"] == [os.path.join(ROOT, "docs", "examples", "my_kernel.py"), "my_module"]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(Stop):
        P.child_main(str(path))
    assert calls[-1] == spec["plugins"]


def test_opt_is_checked_before_ncu_runs(fake_ncu, tmp_path, capsys):
    """--opt takes the CLI's flags: a bad value is exit 2 naming the option, before ncu is asked
    anything; a good one is kept as text for the child (which parses it again) and parsed for
    the engine's timing run."""
    exe, log = fake_ncu
    rc = P.main(["--stage", "split_k", "--family", "cuda", "--ncu", exe, "--no-time", "--opt", "split_k=zero"])
    assert rc == 2 and "option 'split_k'" in capsys.readouterr().err
    assert not log.exists() or not log.read_text().strip()
    args = P.build_parser().parse_args(["--stage", "split_k", "--family", "cuda", "--shape", "256x256x4096",
                                        "--opt", "cuda.10_split_k:split_k=8"])
    pairs = P.select_pairs(args)
    P.select_options(args, pairs)
    assert args.raw_options == {"cuda.10_split_k": {"split_k": "8"}}
    assert args.parsed_options == {"cuda.10_split_k": {"split_k": 8}}


# --- on the GPU: each CUDA stage's header claim, on the counters ------------------------------

# Claims the counters contradict get an entry here (strict xfail, with the measured numbers) until
# the kernel or its header is fixed. Stage 07's store claim was one; its header was corrected.
KNOWN_FAILING: dict = {}


@pytest.fixture(scope="module")
def gpu_profile(tmp_path_factory):
    if not shutil.which("ncu"):
        pytest.skip("ncu (Nsight Compute) is not on PATH")
    out = tmp_path_factory.mktemp("profile") / "ladder.json"
    # tf32 too: the tensor-core stages (12, 13) take no fp32 problem, so an fp32-only profile has
    # no row for their claims. A stage with rows in both precisions is judged on its fp32 row.
    p = subprocess.run([sys.executable, "-m", "compare.outputs.profile", "--stage", "all", "--family", "cuda",
                        "--shape", "2048", "--precision", "fp32", "--precision", "tf32", "--no-time", "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=900,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [r for r in json.loads(out.read_text())["rows"]
            if r["family"] == "cuda" and not r["kernel"].endswith("_atomic")]
    return {r["stage"]: r for r in sorted(rows, key=lambda r: r["precision"] == "fp32")}


def _claim_params():
    out = []
    for c in P.claims():
        marks = ()
        why = KNOWN_FAILING.get((c.stage, c.metric))
        if why:
            marks = (pytest.mark.xfail(reason=why, strict=True),)
        out.append(pytest.param(c.stage, c.metric, marks=marks, id=f"{c.stage}-{c.metric}"))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("stage,metric", _claim_params())
def test_stage_header_claim_holds_on_the_counters(gpu_profile, stage, metric):
    assert stage in gpu_profile, f"the profile has no row of stage {stage} (stages: {sorted(gpu_profile)})"
    row = gpu_profile[stage]
    assert row["status"] == "ok", row["reason"]
    claim = next(c for c in row["claims"] if c["metric"] == metric)
    assert claim["holds"] is True, claim["text"]


@pytest.mark.gpu
def test_every_cuda_launch_was_captured(gpu_profile):
    for stage, row in gpu_profile.items():
        assert row["ncu_kernels"], stage
        assert row["counters"].get("time_ns"), stage


def test_tensor_core_stage_claims_are_absolute():
    """Stage 12 runs tf32 problems no FFMA stage runs: its claims need no base row. The tensor
    pipe claim holds from its floor up and fails on an FFMA-like reading; missing is 'not measured'."""
    tc = next(c for c in P.claims() if c.stage == "tf32_mma" and c.metric == "tensor_pct")
    assert P.evaluate_claim(tc, tc.at_least + 1, None) is True
    assert P.evaluate_claim(tc, 0.1, None) is False
    assert P.evaluate_claim(tc, None, None) is None
    assert P.claim_text(tc, 55.0, None, True).startswith("holds: TC % 55.0 >= ")
    conf = next(c for c in P.claims() if c.stage == "tf32_mma" and c.metric == "conflicts_ld_pct")
    assert P.evaluate_claim(conf, 0.2, None) is True and P.evaluate_claim(conf, 5.0, None) is False


def test_stage_12_claims_hold_on_the_h100_recording():
    """results/h100/tensor-core/profile12.json (H100, 2048^3, tf32 and tf32x3): re-evaluated from
    its raw counters with today's metrics and claims, both stage-12 claims hold in both precisions."""
    import json
    path = os.path.join(ROOT, "results", "h100", "tensor-core", "profile12.json")
    with open(path) as f:
        rows = json.load(f)["rows"]
    for r in rows:
        r.pop("metrics", None), r.pop("claims", None)
    P.fill_metrics(rows)
    assert {r["precision"] for r in rows} == {"tf32", "tf32x3"}
    for r in rows:
        assert r["metrics"]["tensor_pct"] >= next(c for c in P.claims() if c.stage == "tf32_mma" and c.metric == "tensor_pct").at_least
        assert [c["holds"] for c in r["claims"]] == [True, True], r["claims"]


def test_shared_memory_pipe_utilization_is_read_from_its_own_counter():
    """smem %: ncu's LSU shared-memory wavefront utilization, the pipe a mma.sync kernel feeds its
    fragments through, averaged over a window's kernels by duration like the tensor pipe."""
    text = textwrap.dedent('''\
        "ID","Kernel Name","gpu__time_duration.sum","l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_active"
        "","","usecond","%"
        "0","k1","300","60"
        "1","k2","100","20"
        ''')
    ks = P.parse_raw_csv(text)
    chosen, missing = P.choose_metrics({"gpu__time_duration", "l1tex__data_pipe_lsu_wavefronts_mem_shared"})
    assert "smem_pct" not in missing
    c = P.join_window(ks, chosen)
    assert P.METRIC_BY_KEY["smem_pct"].value(c, {}) == pytest.approx(50.0)   # (60*300 + 20*100) / 400
    assert P.METRIC_BY_KEY["smem_pct"].value({}, {}) is None                 # not offered: no number
    assert "smem_pct" in P.choose_metrics({"gpu__time_duration"})[1]
