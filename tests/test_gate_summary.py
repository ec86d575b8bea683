"""The gate's verdict as markdown for a CI job summary (compare.ci.gate --summary), rendered from
the asv result files of tests/fixtures/asv (two real commits of an H200 run) and a head derived
from them with one point made 1.5x slower."""
from __future__ import annotations

import json
import os
import shutil

from compare.ci import gate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "asv")
MACHINE = "h200"
HEAD_SHA = "c0ffee00" * 5


def _files():
    d = os.path.join(FIXTURES, MACHINE)
    files = [os.path.join(d, f) for f in os.listdir(d) if f not in gate.SKIP_FILES and f.endswith(".json")]
    return sorted(files, key=lambda f: json.load(open(f, encoding="utf-8"))["date"])


def _results_with_slow_head(tmp_path) -> tuple[str, str]:
    """(results dir, base sha): a copy of the fixture plus a head file equal to the base but for
    one point of track_time, 1.5x slower."""
    rd = tmp_path / "results"
    shutil.copytree(FIXTURES, rd, ignore=shutil.ignore_patterns("*.md"))
    base_path = _files()[0]
    data = json.load(open(base_path, encoding="utf-8"))
    cols = data["result_columns"]
    i_res = cols.index("result")
    name = next(n for n in data["results"] if n.endswith("track_time"))
    row = data["results"][name]
    j = next(j for j, v in enumerate(row[i_res]) if isinstance(v, float))
    row[i_res][j] *= 1.5
    for extra in ("stats_ci_99_a", "stats_ci_99_b"):   # no recorded interval: the factor alone decides
        if extra in cols and cols.index(extra) < len(row):
            row[cols.index(extra)] = None
    base = data["commit_hash"]
    data["commit_hash"], data["date"] = HEAD_SHA, data["date"] + 1000
    (rd / MACHINE / f"{HEAD_SHA[:8]}-{data['env_name']}.json").write_text(json.dumps(data))
    return str(rd), base


def test_summary_of_the_real_fixture_pair(tmp_path, capsys):
    base, head = (json.load(open(f, encoding="utf-8"))["commit_hash"] for f in _files()[:2])
    out = tmp_path / "summary.md"
    rc = gate.main(["--results-dir", FIXTURES, "--base", base, "--head", head, "--summary", str(out)])
    md = out.read_text()
    printed = capsys.readouterr().out
    assert md.startswith("## GEMM regression gate")
    assert ("passed" in md.splitlines()[0]) == (rc == 0) and ("FAILED" in md.splitlines()[0]) == (rc == 1)
    assert f"base `{base[:12]}` → head `{head[:12]}`" in md and "machine `h200`" in md
    # every point the printed table shows is in the folded full table, with its kernel and shape
    table = md[md.index("<details>"):]
    assert table.count("\n| gemm.") == printed.count("\ngemm.")
    assert "| gemm.SplitK.track_time | cuda.10_split_k | 256x256x32768 fp32 |" in table
    counts = md.split("\n\n")[2]               # the verdict counts line: "5 SAME", "**1 SLOW** · 4 SAME"
    assert sum(int(part.strip("*").split()[0]) for part in counts.split(" · ")) == table.count("\n| gemm.")


def test_summary_names_the_slow_point_first(tmp_path):
    rd, base = _results_with_slow_head(tmp_path)
    out = tmp_path / "s.md"
    assert gate.main(["--results-dir", rd, "--base", base, "--head", HEAD_SHA, "--summary", str(out)]) == 1
    md = out.read_text()
    lines = md.splitlines()
    assert lines[0].startswith("## GEMM regression gate") and "FAILED: 1 of" in lines[0]
    assert "**1 SLOW**" in md
    failing = md[md.index("### Points that fail the gate (1)"):md.index("<details>")]
    slow_rows = [l for l in failing.splitlines() if l.startswith("| gemm.")]
    assert len(slow_rows) == 1 and "| 1.500 | **SLOW (> x1.02)** |" in slow_rows[0]
    cells = [c.strip() for c in slow_rows[0].strip("|").split("|")]
    assert cells[0].endswith("track_time") and cells[1] and cells[2]          # benchmark, kernel, shape
    assert cells[3].endswith("us") and cells[4].endswith("us")                # base and head times


def test_unwritable_summary_is_a_usage_error_before_reading(tmp_path, capsys):
    assert gate.main(["--results-dir", str(tmp_path / "none"), "--base", "a", "--head", "b",
                      "--summary", "/proc/summary.md"]) == gate.USAGE_EXIT
    assert "--summary /proc/summary.md can't be written" in capsys.readouterr().err
    assert gate.main(["--results-dir", str(tmp_path), "--base", "a", "--head", "b",
                      "--summary", str(tmp_path)]) == gate.USAGE_EXIT
