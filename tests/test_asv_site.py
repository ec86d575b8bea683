"""Several machines in one asv site (compare/ci/site.py) and the gate's refusal to compare commits
measured on two machines (compare/ci/gate.py). CPU only; the results are the committed fixture's,
copied under a second machine name."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from compare.ci import gate, site

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "asv")
SOURCE = "h200"


def _as_machine(src_dir: str, dst_results: str, name: str, only=None) -> list[str]:
    """Copy the fixture's machine folder as machine ``name`` (asv checks the name in each file)."""
    out = os.path.join(dst_results, name)
    os.makedirs(out, exist_ok=True)
    commits = []
    for f in sorted(os.listdir(src_dir)):
        with open(os.path.join(src_dir, f)) as fh:
            data = json.load(fh)
        if f == "machine.json":
            data["machine"] = name
        else:
            if only is not None and f.split("-")[0] not in only:
                continue
            data["params"]["machine"] = name
            commits.append(data["commit_hash"])
        with open(os.path.join(out, f), "w") as fh:
            json.dump(data, fh)
    return commits


@pytest.fixture
def two_machines(tmp_path):
    src = os.path.join(FIXTURES, SOURCE)
    a, b = tmp_path / "a", tmp_path / "b"
    commits = _as_machine(src, str(a), "h200")
    _as_machine(src, str(b), "h100")
    bench = os.path.join(ROOT, "results", "h200", "asv", "benchmarks.json")
    shutil.copy(bench, a / "benchmarks.json")
    return str(a), str(b), commits


def test_site_merges_every_machine_and_publishes_both(two_machines, tmp_path):
    pytest.importorskip("asv")
    a, b, _ = two_machines
    merged, html = tmp_path / "merged", tmp_path / "html"
    assert site.main(["--results", a, "--results", b, "--merged", str(merged), "-o", str(html)]) == 0
    assert sorted(os.listdir(merged)) == ["benchmarks.json", "h100", "h200"]
    with open(html / "index.json") as f:
        index = json.load(f)
    assert sorted(index["machines"]) == ["h100", "h200"]
    graphs = [p for p, _, _ in os.walk(html / "graphs")]
    assert any("machine-h100" in p for p in graphs) and any("machine-h200" in p for p in graphs)


def test_site_without_results_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert site.main(["--results", str(tmp_path / "empty"), "--merged", str(tmp_path / "m")]) == 2
    assert "no asv results" in capsys.readouterr().err


def test_gate_refuses_base_and_head_from_two_machines(tmp_path):
    src = os.path.join(FIXTURES, SOURCE)
    files = sorted(f for f in os.listdir(src) if f != "machine.json")
    base, head = files[0].split("-")[0], files[1].split("-")[0]
    results = tmp_path / "results"
    _as_machine(src, str(results), "h200", only={base})
    _as_machine(src, str(results), "h100", only={head})
    with pytest.raises(gate.UsageError, match="measured on h200 and head .* on h100: the gate compares two commits"):
        gate.pick(str(results), base, head, None, None, warn=lambda m: None)
    # On one machine the same two commits are a comparison, not an error.
    _as_machine(src, str(results), "h100", only={base})
    m, bf, hf = gate.pick(str(results), base, head, None, None, warn=lambda m: None)
    assert m == "h100" and (bf.commit[:8], hf.commit[:8]) == (base[:8], head[:8])
