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
    assert sorted(os.listdir(merged)) == [site.MERGED_MARK, "benchmarks.json", "h100", "h200"]
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


# ---------------------------------------------------------------------------- every number drawn

def _numbers_in_results(results_dir):
    """{machine: count} of the numbers (finite, > 0) the result files hold, read here by hand."""
    out = {}
    for m in os.listdir(results_dir):
        mdir = os.path.join(results_dir, m)
        if not os.path.isfile(os.path.join(mdir, "machine.json")):
            continue
        for fn in os.listdir(mdir):
            if fn == "machine.json" or not fn.endswith(".json"):
                continue
            with open(os.path.join(mdir, fn)) as f:
                data = json.load(f)
            i = data["result_columns"].index("result")
            for row in data["results"].values():
                vals = row[i] if isinstance(row[i], list) else [row[i]]
                out[m] = out.get(m, 0) + sum(1 for v in vals if isinstance(v, (int, float)) and 0 < v < float("inf"))
    return out


def _numbers_in_graphs(html):
    """{machine: count} of the numbers in the site's per-machine graph files."""
    out = {}
    for dirpath, _, files in os.walk(os.path.join(html, "graphs")):
        machine = [p for p in dirpath.split(os.sep) if p.startswith("machine-")]
        for fn in files:
            if not machine or fn == "summary.json":
                continue
            with open(os.path.join(dirpath, fn)) as f:
                for _rev, v in json.load(f):
                    vals = v if isinstance(v, list) else [v]
                    m = machine[0][len("machine-"):]
                    out[m] = out.get(m, 0) + sum(1 for x in vals if isinstance(x, (int, float)) and x > 0)
    return out


def test_committed_results_every_recorded_number_is_on_a_graph(tmp_path, capsys):
    """The committed results of both GPUs, published: each number recorded is a point of a graph.
    (Merging benchmarks.json whole from the last source left 120 of the H100's 226 out.)"""
    pytest.importorskip("asv")
    sources = site.default_sources(ROOT)
    assert {os.path.basename(os.path.dirname(s)) for s in sources} >= {"h100", "h200"}
    recorded = {}
    for s in sources:
        for m, n in _numbers_in_results(s).items():
            recorded[m] = recorded.get(m, 0) + n
    assert recorded["h100"] >= 226 and recorded["h200"] >= 13
    html = tmp_path / "html"
    assert site.main(["--merged", str(tmp_path / "merged"), "-o", str(html)]) == 0, capsys.readouterr().err
    assert _numbers_in_graphs(str(html)) == recorded
    out = capsys.readouterr().out
    assert f"machine h100: {recorded['h100']} of {recorded['h100']} recorded numbers" in out


def test_a_number_the_site_cannot_show_is_an_error_naming_it(two_machines, tmp_path, capsys):
    """A result for a commit that is not in the git history: exit 2 before publishing, naming the
    machine, the commit and why; --skip-unshowable publishes the rest and still names it."""
    pytest.importorskip("asv")
    a, b, _ = two_machines
    src = os.path.join(b, "h100")
    f = sorted(x for x in os.listdir(src) if x != "machine.json")[0]
    with open(os.path.join(src, f)) as fh:
        data = json.load(fh)
    data["commit_hash"] = "0123456789abcdef0123456789abcdef01234567"
    with open(os.path.join(src, "01234567-" + f.split("-", 1)[1]), "w") as fh:
        json.dump(data, fh)
    args = ["--results", a, "--results", b, "--merged", str(tmp_path / "m"), "-o", str(tmp_path / "html")]
    assert site.main(args) == 2
    err = capsys.readouterr().err
    assert "machine h100, commit 01234567" in err and "not in this clone's git history" in err
    assert not (tmp_path / "html").exists()
    assert site.main(args + ["--skip-unshowable"]) == 0
    assert "warning: machine h100, commit 01234567" in capsys.readouterr().err


def test_site_refuses_to_empty_a_folder_it_did_not_make(tmp_path, capsys):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "precious.txt").write_text("x")
    assert site.main(["--results", os.path.join(ROOT, "results", "h100", "asv"), "--merged", str(keep)]) == 2
    assert "not made by compare.ci.site" in capsys.readouterr().err
    assert (keep / "precious.txt").read_text() == "x"


# ---------------------------------------------------------------------------- direction, offline, ladder

H100 = os.path.join(ROOT, "results", "h100", "asv")
PCT = "gemm.TiledPctCublas.track_pct_cublas"


def _planted(tmp_path):
    """The committed H100 results (the history of main) with one % of cuBLAS that drops 80 -> 40
    and one that rises 40 -> 80 at the newest commit (every older commit planted at 80 / 40)."""
    dst = tmp_path / "planted"
    shutil.copytree(H100, dst)
    files = [(json.load(open(os.path.join(dst, "h100", f))), f) for f in os.listdir(dst / "h100")
             if f != "machine.json" and f.endswith(".json")]
    # commits recorded with an --bench filter (the Skinny classes alone) have no such point
    files = [df for df in files if PCT in df[0]["results"]]
    files.sort(key=lambda df: df[0]["date"])
    for i, (data, fn) in enumerate(files):
        drop, rise = (40.0, 80.0) if i == len(files) - 1 else (80.0, 40.0)
        row = data["results"][PCT]
        kernels = row[1][0]
        row[0][kernels.index("'cuda.08_warptile'")] = drop
        row[0][kernels.index("'cuda.09_double_buffered'")] = rise
        with open(os.path.join(dst, "h100", fn), "w") as f:
            json.dump(data, f)
    return str(dst)


def test_regressions_page_flags_a_drop_of_pct_cublas_and_never_a_rise(tmp_path):
    pytest.importorskip("asv")
    html = tmp_path / "html"
    assert site.main(["--results", _planted(tmp_path), "--merged", str(tmp_path / "m"), "-o", str(html)]) == 0
    regs = {r[0]: r for r in json.load(open(html / "regressions.json"))["regressions"]}
    drop, rise = f"{PCT}('cuda.08_warptile', 'fp32')", f"{PCT}('cuda.09_double_buffered', 'fp32')"
    assert drop in regs and rise not in regs, sorted(regs)
    last, best, jumps = regs[drop][4], regs[drop][5], regs[drop][6]
    assert (last, best) == (40.0, 80.0) and [j[2:] for j in jumps] == [[80.0, 40.0]]
    # times keep asv's own direction: nothing of the (unchanged) times is reversed into a regression
    assert not [n for n in regs if ".track_time" in n and regs[n][4] < regs[n][5]]


def test_site_works_offline_and_is_patched(tmp_path):
    """index.html loads nothing from the network; every vendored file is there; the y axis, the
    default curves and the list's colours are patched; the ladder page and commit pages exist."""
    pytest.importorskip("asv")
    html = tmp_path / "html"
    assert site.main(["--results", H100, "--merged", str(tmp_path / "m"), "-o", str(html)]) == 0
    index = (html / "index.html").read_text()
    import re
    srcs = re.findall(r'<(?:script|link)[^>]*\s(?:src|href)="([^"]+)"', index)
    assert not [s for s in srcs if "://" in s], srcs
    for s in srcs:
        assert (html / s).is_file(), s
    assert len([s for s in srcs if s.startswith("vendor/")]) == 10
    assert "var max_curves = 16;" in (html / "graphdisplay.js").read_text()
    assert "min = 0;  /* compare.ci.site" in (html / "graphdisplay.js").read_text()
    assert "var worse =" in (html / "summarylist.js").read_text()
    ladder = (html / "ladder.html").read_text()
    assert "100% = cuBLAS fp32" in ladder and "tf32x3 is compared with cuBLAS fp32" in ladder
    assert "://" not in ladder.replace("http://www.w3.org/2000/svg", "")
    idx = json.load(open(html / "index.json"))
    assert idx["show_commit_url"] == "commits/"
    for sha in idx["revision_to_hash"].values():
        assert sha[:8] in (html / "commits" / sha / "index.html").read_text()


def test_site_refuses_an_asv_whose_page_loads_an_unknown_script(tmp_path):
    (tmp_path / "index.html").write_text('<html><script src="https://cdn.example/x.js"></script></html>')
    with pytest.raises(site.UsageError, match="https://cdn.example/x.js"):
        site.offline(str(tmp_path))


def test_gbps_and_per_shape_pct_read_higher_is_better_and_stay_off_the_ladder(tmp_path):
    """The skinny classes (benchmarks/gemm.py): GB/s and the per-shape % of cuBLAS are judged the
    right way up by the list page's colours (and, through the same declaration, the regressions
    page); the ladder charts geometric means per (kernel, precision) only, so a per-shape point
    (three params) is not drawn as a stage."""
    import re
    from compare.ci import ladder
    for name in ("gemm.SkinnyGbps.track_gbps", "gemm.SkinnyTensorCorePctCublas.track_pct_cublas"):
        assert re.search(site.HIGHER_RE, name), name
    assert not re.search(site.HIGHER_RE, "gemm.Tiled.track_time")
    machine = tmp_path / "m"
    machine.mkdir()
    (machine / "machine.json").write_text("{}")
    sha = "a" * 40
    data = {"commit_hash": sha, "env_name": "e", "result_columns": ["result", "params", "version"],
            "results": {"gemm.SkinnyGbps.track_gbps": [[100.0], [["'cublas'"], ["'1x8192x4096'"], ["'fp32'"]], "1"],
                        "gemm.SweepCuda.track_geomean_pct_cublas": [[90.0], [["'cuda.11_stream_k'"], ["'fp32'"]], "1"]}}
    (machine / "aaaaaaaa-e.json").write_text(json.dumps(data))
    charts = ladder.collect(str(tmp_path), {sha: 1})
    assert charts == {("cuda", "fp32"): {("sweep", "cuda.11_stream_k"): {"m": {1: 90.0}}}}
