"""The published asv site as a person sees it: headless Chromium (Debian's `chromium`, driven by
Playwright through executable_path: no browser download) opens the site that compare.ci.site makes
from the committed results of both GPUs, served from 127.0.0.1 with nothing from the network.

  * every benchmark's graph draws, for each machine, as many points as that machine recorded
    for it (counted here from the result files, all parameter values selected);
  * the ladder page draws a chart per family and precision, with its 100% line;
  * the regressions page lists a planted drop of % of cuBLAS and not a planted rise.
.ci/run installs chromium and playwright; without them this test skips, which CI
(GEMM_LADDER_NO_SKIPS) turns into a failure."""
from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import threading
import urllib.parse

import pytest

from compare.ci import site

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PCT = "gemm.TiledPctCublas.track_pct_cublas"
DROP, RISE = "cuda.08_warptile", "cuda.09_double_buffered"


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on PATH (apt-get install chromium)")


def _planted_h100(tmp_path) -> str:
    """The committed H100 results with one % of cuBLAS dropping 80 -> 40 and one rising 40 -> 80
    at the newest commit (every older commit planted at 80 / 40)."""
    dst = tmp_path / "h100-planted"
    shutil.copytree(os.path.join(ROOT, "results", "h100", "asv"), dst)
    files = []
    for fn in os.listdir(dst / "h100"):
        if fn != "machine.json" and fn.endswith(".json"):
            with open(dst / "h100" / fn) as f:
                files.append((json.load(f), fn))
    # commits recorded with an --bench filter (the Skinny classes alone) have no such point
    files = [df for df in files if PCT in df[0]["results"]]
    files.sort(key=lambda df: df[0]["date"])
    for i, (data, fn) in enumerate(files):
        drop, rise = (40.0, 80.0) if i == len(files) - 1 else (80.0, 40.0)
        row = data["results"][PCT]
        kernels = row[1][0]
        row[0][kernels.index(f"'{DROP}'")] = drop
        row[0][kernels.index(f"'{RISE}'")] = rise
        with open(dst / "h100" / fn, "w") as f:
            json.dump(data, f)
    return str(dst)


def _recorded(results_dirs) -> dict:
    """{(machine, benchmark): number of recorded numbers}, read from the result files by hand."""
    out = {}
    for d in results_dirs:
        for m in os.listdir(d):
            if not os.path.isfile(os.path.join(d, m, "machine.json")):
                continue
            for fn in os.listdir(os.path.join(d, m)):
                if fn == "machine.json" or not fn.endswith(".json"):
                    continue
                with open(os.path.join(d, m, fn)) as f:
                    data = json.load(f)
                i = data["result_columns"].index("result")
                for name, row in data["results"].items():
                    vals = row[i] if isinstance(row[i], list) else [row[i]]
                    n = sum(1 for v in vals if isinstance(v, (int, float)) and 0 < v < float("inf"))
                    if n:
                        out[(m, name)] = out.get((m, name), 0) + n
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    pytest.importorskip("asv")
    exe = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    tmp = tmp_path_factory.mktemp("browser")
    sources = [_planted_h100(tmp), os.path.join(ROOT, "results", "h200", "asv")]
    html = tmp / "html"
    assert site.main([a for s in sources for a in ("--results", s)]
                     + ["--merged", str(tmp / "merged"), "-o", str(html)]) == 0
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    handler = functools.partial(Quiet, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}/", "browser": browser, "html": html,
               "recorded": _recorded(sources)}
        browser.close()
    server.shutdown()


def _page(served):
    page = served["browser"].new_page(viewport={"width": 1200, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    # Nothing leaves 127.0.0.1: a request elsewhere (a CDN) is refused and fails the test below.
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(served["url"])
               else (errors.append(f"network: {route.request.url}"), route.abort()))
    return page, errors


def test_every_benchmark_graph_draws_every_recorded_point_of_each_machine(served):
    with open(served["html"] / "index.json") as f:
        index = json.load(f)
    page, errors = _page(served)
    checked = 0
    for (machine, name), want in sorted(served["recorded"].items()):
        b = index["benchmarks"][name]
        params = [("machine", machine)] + [(f"p-{pn}", v) for pn, vals in zip(b["param_names"], b["params"])
                                           for v in vals]
        page.goto(served["url"] + "index.html#" + name + "?" + urllib.parse.urlencode(params))
        page.wait_for_function("() => window.jQuery && $('#main-graph').data('plot') !== undefined", timeout=20000)
        page.wait_for_timeout(200)
        drawn = page.evaluate("""() => $('#main-graph').data('plot').getData()
            .reduce((n, s) => n + s.data.filter(p => p[1] !== null && p[1] > 0).length, 0)""")
        assert drawn == want, f"{name} on {machine}: {drawn} points drawn, {want} recorded"
        checked += 1
    assert {m for m, _ in served["recorded"]} == {"h100", "h200"} and checked == len(served["recorded"]) >= 13
    assert not errors, errors
    page.close()


def test_ladder_page_draws_each_chart_with_its_hundred_percent_line(served, tmp_path):
    page, errors = _page(served)
    page.goto(served["url"] + "ladder.html")
    charts = page.locator("svg.ladder-chart")
    assert charts.count() == 6                     # cuda, triton x fp32, tf32, tf32x3 (H100)
    for i in range(charts.count()):
        c = charts.nth(i)
        assert c.bounding_box()["height"] > 100
        visible = c.locator("g.series:visible g.pt")
        assert visible.count() >= 2, c.get_attribute("id")
        assert c.locator("line.hundred").count() == 1 and "100% = cuBLAS" in c.text_content()
    # a stage's checkbox hides and shows its lines
    box = page.locator("#cuda-fp32 input[type=checkbox]:checked").first
    sid = box.get_attribute("data-series")
    series = page.locator(f'g.series[data-series="{sid}"]')
    assert series.first.is_visible()
    box.uncheck()
    assert not series.first.is_visible()
    page.screenshot(path=str(tmp_path / "ladder.png"), full_page=True)
    assert (tmp_path / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not errors, errors
    page.close()


def test_regressions_page_lists_the_planted_drop_and_not_the_rise(served):
    page, errors = _page(served)
    page.goto(served["url"] + "index.html#regressions")
    page.wait_for_selector("#regressions-body table tbody tr", timeout=20000)
    rows = page.locator("#regressions-body table tbody tr").all_inner_texts()
    pct_rows = [r for r in rows if "TiledPctCublas" in r or "Tiled" in r and "cuBLAS" in r]
    assert any(DROP in r for r in rows), rows
    assert not any(RISE in r for r in rows), rows
    assert pct_rows, rows
    assert not errors, errors
    page.close()
