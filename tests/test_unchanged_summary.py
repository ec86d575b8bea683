"""reproduce/unchanged_reduce.py and unchanged_summary.py (issue 42's "numbers unchanged" check):
verdicts and the configuration hash worked out by hand from fake runs."""
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPRO = os.path.join(os.path.dirname(HERE), "reproduce")
# two shapes of the standard "square" set, so the summary files them under it
SHAPES = ("1024x1024x1024", "2048x2048x2048")


def _doc(pcts, config=None):
    rows = []
    for shape, pct in zip(SHAPES, pcts):
        rows.append({"kernel": "cublas", "shape": shape, "precision": "fp32", "status": "ok", "pct_cublas": 100.0})
        rows.append({"kernel": "triton.stream_k", "shape": shape, "precision": "fp32", "status": "ok",
                     "pct_cublas": pct, "median_ms": 1.0, "config": config or {"decomposition": "dp"}})
    rows.append({"kernel": "cuda.13_wgmma_tma", "shape": SHAPES[0], "precision": "fp32", "status": "unsupported"})
    return {"created": "x", "command": "python -m compare ...", "environment": {"gpu": "FakeGPU", "torch": "t",
                                                                                 "triton": "3.6.0"}, "results": rows}


def _write(d, name, doc):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        json.dump(doc, f)


def _two_rounds(d, before, after):
    """before-1/2 and after-1/2 in ``d``: round r's rows all at before[r - 1] / after[r - 1] %."""
    for tree, pcts in (("before", before), ("after", after)):
        for r, pct in enumerate(pcts, 1):
            _write(d, f"{tree}-{r}.json", _doc((pct, pct)))
    return d


def _summary(*dirs):
    return subprocess.run([sys.executable, os.path.join(REPRO, "unchanged_summary.py"), *map(str, dirs)],
                          capture_output=True, text=True, cwd=os.path.dirname(HERE))


def test_within_the_spread_and_slower_than_it(tmp_path):
    # before 100/100 then 101/101 (A/A +1.0%), after 100.5/100.5 then 100.5/100.5 (A/A 0):
    # A/B = mean(ln(100.5/100), ln(100.5/101)) = ~0.0000 -> within (|0| <= ln 1.01)
    d = _two_rounds(tmp_path / "gpu0", before=(100, 101), after=(100.5, 100.5))
    p = _summary(d)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "| square | triton.stream_k | fp32 | 2 | ±1.0% | +0.0% | within |" in p.stdout
    # after 97 in both rounds: A/B = mean(ln .97, ln(97/101)) = mean(-0.03046, -0.04041) = -0.03543
    # -> exp = 0.9652, -3.5%, beyond ±1.0% (the
    # before pair's spread; after's own pair is 0) -> SLOWER and exit 1
    e = _two_rounds(tmp_path / "gpu1", before=(100, 101), after=(97, 97))
    p = _summary(e)
    assert p.returncode == 1 and "| -3.5% | SLOWER |" in p.stdout, p.stdout


def test_a_row_that_stopped_timing_fails(tmp_path):
    d = tmp_path / "gpu0"
    _write(d, "before-1.json", _doc((100, 100)))
    after = _doc((100, 100))
    after["results"][3]["status"] = "FAILED"
    _write(d, "after-1.json", after)
    p = _summary(d)
    assert p.returncode == 1 and "1 row(s) timed before and not after" in p.stdout, p.stdout


def test_reduce_hashes_old_spellings_as_todays(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "reduced"
    _write(runs, "before-1.json", _doc((100, 100), {"b_operand": "smem", "decomposition": "sk"}))
    _write(runs, "after-1.json", _doc((100, 100), {"b_transpose": "smem", "decomposition": "hybrid"}))
    _write(runs, "after-2.json", _doc((100, 100), {"b_transpose": "regs", "decomposition": "hybrid"}))
    subprocess.run([sys.executable, os.path.join(REPRO, "unchanged_reduce.py"), str(runs), str(out)], check=True)
    want = hashlib.sha1(json.dumps({"b_transpose": "smem", "decomposition": "hybrid"}, sort_keys=True)
                        .encode()).hexdigest()[:12]
    reduced = {n: json.load(open(out / n))["results"] for n in os.listdir(out)}
    stream_k = {n: [r for r in rows if r["kernel"] == "triton.stream_k"] for n, rows in reduced.items()}
    assert [r["config_sha1"] for r in stream_k["before-1.json"]] == [want, want]
    assert [r["config_sha1"] for r in stream_k["after-1.json"]] == [want, want]
    assert stream_k["after-2.json"][0]["config_sha1"] != want
    assert not any(r["status"] == "unsupported" for rows in reduced.values() for r in rows)
    assert set(reduced["before-1.json"][1]) == {"kernel", "shape", "precision", "status", "reason", "median_ms",
                                                "iqr_ms", "pct_cublas", "rel_err", "sm_clock_mhz", "config_sha1"}
    # the summary reads the reduced rows: one pair the same configuration, one not
    os.rename(out / "after-2.json", tmp_path / "x.json")
    p = _summary(out)
    assert "configurations: 2 row pairs ran the same configuration before and after, 0 differ" in p.stdout, p.stdout
