"""CPU tests of the gate's measuring tools: compare.ci.gate_sensitivity's verdicts and argument
checks, compare.ci.profile_gate's argument checks and table, the suite's phase log."""
from __future__ import annotations

import json
import random

import pytest

from compare.ci import gate_sensitivity, profile_gate, suite_cache


def _proc(kernel_s, cublas_s, noise=0.003, n=100, seed=0):
    rng = random.Random(seed)
    return {"kernel": {"median_s": kernel_s, "times_s": [kernel_s * (1 + noise * rng.gauss(0, 1)) for _ in range(n)]},
            "cublas": {"median_s": cublas_s, "times_s": []}}


def test_planted_3pct_is_slow_and_a_drifting_aa_pair_is_not():
    base = _proc(1e-3, 0.8e-3, seed=1)
    head = _proc(1.03e-3, 0.8e-3, seed=2)
    v = gate_sensitivity.judge(base, head, 1.02)
    assert v["time"] == "SLOW" and v["rel_cublas"] == "SLOW"
    # A/A on a machine whose clock dropped 3% between the processes: both kernels slow down, the
    # time alone cries wolf, relative to the same process's cuBLAS it does not
    drift = _proc(1.03e-3, 0.824e-3, seed=3)
    v = gate_sensitivity.judge(base, drift, 1.02)
    assert v["time"] == "SLOW" and v["rel_cublas"] == "SAME"
    assert v["rel_cublas_slowdown"] == pytest.approx(1.0, abs=0.002)


def test_pooled_verdict_uses_every_pair():
    pairs = [(_proc(1e-3, 1e-3, seed=i), _proc(1.03e-3, 1e-3, seed=10 + i)) for i in range(3)]
    p = gate_sensitivity._pooled(pairs, 1.02)
    assert p["rel_cublas"] == "SLOW" and p["time_slowdown"] == pytest.approx(1.03, abs=0.003)


@pytest.mark.parametrize("argv", [["--plant", "0"], ["--plant", "150%"], ["--plant", "x"], ["--aa", "0", "--ab", "0"],
                                  ["--factor", "1"], ["--kernel", "no.such_kernel"], ["--shape", "0x0"]])
def test_sensitivity_refuses_bad_arguments_before_any_gpu_work(argv, monkeypatch, capsys):
    monkeypatch.setattr(gate_sensitivity, "run_process", lambda *a: pytest.fail("started a measuring process"))
    assert gate_sensitivity.main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_plant_percentages_parse():
    assert gate_sensitivity._parse_plant("3%") == pytest.approx(0.03)
    assert gate_sensitivity._parse_plant("0.05") == pytest.approx(0.05)


def test_profile_refuses_a_malformed_point(monkeypatch, capsys):
    monkeypatch.setattr(profile_gate, "run_point", lambda *a: pytest.fail("started a process"))
    assert profile_gate.main(["--point", "cublas:1024"]) == 2
    assert "KERNEL:SHAPE:PRECISION" in capsys.readouterr().err


def test_profile_table_has_every_phase():
    runs = [{"point": "cublas:1024:fp32", "caches": "cold", "wall_s": 9.5,
             "phases": {p: 0.5 for p in profile_gate.PHASES}}]
    text = profile_gate.table(runs)
    assert all(p in text.splitlines()[0] for p in profile_gate.PHASES) and "9.50" in text


def test_phase_log_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv("GEMM_BENCH_PHASES", raising=False)
    suite_cache.phase_log({"kind": "x"})            # nothing asked: nothing written, no error
    path = tmp_path / "phases.jsonl"
    monkeypatch.setenv("GEMM_BENCH_PHASES", str(path))
    suite_cache.phase_log({"kind": "a", "t": 1.5})
    suite_cache.phase_log({"kind": "b"})
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines == [{"kind": "a", "t": 1.5}, {"kind": "b"}]
    age = suite_cache.process_age_s()
    assert age is None or age > 0


def test_history_merge_takes_a_points_samples_with_its_value():
    from compare.ci import asv_results
    cols = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
            "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]

    def doc(values, samples):
        row = [values, [["'a'", "'b'"]], "1", 0, 1.0, None, None, None, None, None, None, samples, None]
        return {"commit_hash": "c" * 40, "result_columns": cols, "results": {"gemm.X.track_time": row}}
    old = doc([1.0, None], [[0.9, 1.0, 1.1, 1.0], None])
    new = doc([2.0, 3.0], [[1.9, 2.0, 2.1, 2.0], [2.9, 3.0, 3.1, 3.0]])
    merged, notes, changed = asv_results.merge(old, new)
    pts = asv_results.points_of(merged)
    assert changed and pts[("gemm.X.track_time", ("b",))].value == 3.0
    assert pts[("gemm.X.track_time", ("b",))].samples == (2.9, 3.0, 3.1, 3.0)     # taken with its value
    assert pts[("gemm.X.track_time", ("a",))].samples == (0.9, 1.0, 1.1, 1.0)     # the recorded one stays

