"""Named shape sets, the shapes-file reader and the sweep summary/plot (CPU only)."""
from __future__ import annotations

import csv
import io
import json
import math

import pytest

from compare.harness import shapes
from compare.outputs import sweep
from compare.harness.errors import UsageError
from compare.harness.problem import MAX_ELEMENTS, MAX_K_FP32
from compare.harness.runner import Result

SET_NAMES = ("square", "odd", "llm", "skinny", "long_k", "asv", "heldout", "all")


# ---- shape sets ------------------------------------------------------------------------------

def test_every_named_set_exists_and_is_documented():
    assert set(SET_NAMES) <= set(shapes.SHAPE_SETS)
    assert set(shapes.SHAPE_SETS) == set(shapes.SHAPE_SET_DOCS) == set(shapes.SETS)
    for name in shapes.SHAPE_SETS:
        doc = shapes.SHAPE_SET_DOCS[name]
        assert doc.strip() and "\n" not in doc, name


@pytest.mark.parametrize("name", SET_NAMES)
def test_set_shapes_are_valid_runnable_and_at_least_one_gflop(name):
    got = shapes.SHAPE_SETS[name]
    assert got, name
    assert len(set(got)) == len(got), f"{name} has duplicates"
    for s in got:
        assert len(s) == 3 and all(type(d) is int and d >= 1 for d in s), (name, s)
        M, N, K = s
        assert 2 * M * N * K >= 1e9, f"{name}: {s} is {2 * M * N * K / 1e9:.2f} GFLOP"
        # every precision can run it: 32-bit indices and the fp32 check's K limit
        assert max(M * K, K * N, M * N) <= MAX_ELEMENTS and K <= MAX_K_FP32, (name, s)


def test_sets_cover_their_definitions():
    for M, N, K in shapes.SHAPE_SETS["odd"]:
        assert all(d % 4 for d in (M, N, K)), (M, N, K)          # so none is a multiple of 8 or 16
    assert any(all(d % 2 for d in s) for s in shapes.SHAPE_SETS["odd"])
    for M, N, K in shapes.SHAPE_SETS["skinny"]:
        assert min(M, N) <= 64, (M, N, K)
    assert any(M <= 64 for M, N, K in shapes.SHAPE_SETS["skinny"])
    assert any(N <= 64 for M, N, K in shapes.SHAPE_SETS["skinny"])
    for M, N, K in shapes.SHAPE_SETS["long_k"]:
        assert K >= 16 * max(M, N), (M, N, K)
    assert (64, 4096, 65536) not in shapes.SHAPE_SETS["long_k"]
    for M, N, K in shapes.SHAPE_SETS["square"]:
        assert M == N == K
    assert any(M & (M - 1) for M, _, _ in shapes.SHAPE_SETS["square"]), "square needs non-powers of two"
    assert (512, 512, 512) not in shapes.SHAPE_SETS["square"]
    hidden = {4096, 5120, 8192, 11008, 12288, 13824, 14336, 28672}
    for M, N, K in shapes.SHAPE_SETS["llm"]:
        assert N in hidden and K in hidden and 16 <= M <= 8192, (M, N, K)


def test_all_is_the_ordered_union_of_the_five_sets():
    expected = []
    for part in ("square", "odd", "llm", "skinny", "long_k"):
        expected += [s for s in shapes.SHAPE_SETS[part] if s not in expected]
    assert list(shapes.SHAPE_SETS["all"]) == expected
    assert len(expected) >= 30


def test_asv_set_is_small_and_drawn_from_the_sets():
    asv = shapes.SHAPE_SETS["asv"]
    assert 4 <= len(asv) <= 8
    # one or two from each of the five sets (a shape may belong to more than one)
    for part in ("square", "odd", "llm", "skinny", "long_k"):
        assert any(s in shapes.SHAPE_SETS[part] for s in asv), part
    assert max(2 * M * N * K for M, N, K in asv) <= 1e11   # seconds per kernel, not minutes
    # The unaligned long-K case (neither operand's rows 16-byte aligned: K and N not multiples
    # of 4), the Triton family's worst sweep shape, is in the history too.
    assert any(K % 4 and N % 4 and K >= 16 * max(M, N) for M, N, K in asv)


def test_heldout_shares_no_shape_with_anything_tuning_may_use():
    held = set(shapes.SHAPE_SETS["heldout"])
    assert len({("sq" if M == N == K else "x") for M, N, K in held}) == 2   # a mix, not one kind
    for h in shapes.HELDOUT_SETS:
        assert not shapes.SETS[h].tunable and "tuning must never" in shapes.SHAPE_SET_DOCS[h], h
    tunable = {s for name, ss in shapes.SETS.items() if ss.tunable for s in ss.shapes}
    assert all(ss.tunable == (name not in shapes.HELDOUT_SETS) for name, ss in shapes.SETS.items())
    for h in shapes.HELDOUT_SETS:
        assert not tunable & set(shapes.SHAPE_SETS[h]), h
    # the three weak classes are what their names say, and each shape is worth timing
    assert all(M == 1 for M, N, K in shapes.SHAPE_SETS["heldout_m1"])
    assert all(16 <= M <= 48 and 16 <= N <= 48 and K >= 262144 for M, N, K in shapes.SHAPE_SETS["heldout_tiny_out"])
    assert all(256 <= M <= 1024 and K >= 8192 for M, N, K in shapes.SHAPE_SETS["heldout_llm_k8k"])
    pad = shapes.SHAPE_SETS["heldout_llm_pad"]
    assert all(128 < M < 1024 and K >= 8192 for M, N, K in pad) and sum(0 < M % 128 <= 64 for M, N, K in pad) >= 6
    for h in shapes.HELDOUT_SETS:
        for M, N, K in shapes.SHAPE_SETS[h]:
            if shapes.SETS[h].bandwidth_bound or shapes.SETS[h].small:   # sized by bytes: >= 2^20 floats
                assert 4 * (M * K + K * N) >= 4 * 2**20, (h, M, N, K)
            else:
                assert 2 * M * N * K >= shapes.MIN_FLOPS, (h, M, N, K)
    # the bandwidth-bound classes: 20 matrices times 1-8 vectors, M*K from 2^20 to 2^28; 10 single
    # rows, K*N from 2^20 to 2^28
    sk = shapes.SHAPE_SETS["heldout_skinny"]
    nvec = [(M, N, K) for M, N, K in sk if N <= 8]
    rows = [(M, N, K) for M, N, K in sk if M == 1]
    assert len(nvec) == 20 and len(rows) == 10 and len(sk) == 30
    assert all(2**20 <= M * K <= 2**28 for M, N, K in nvec) and all(2**20 <= K * N <= 2**28 for M, N, K in rows)
    assert all(N > 8 for M, N, K in rows) and len(set(sk)) == len(sk)
    assert [s.name for s in shapes.SETS.values() if s.bandwidth_bound] == ["asv_skinny", "heldout_skinny", "tune_skinny"]


def test_tune_skinny_is_the_held_out_classes_with_none_of_their_shapes():
    """Rules for the bandwidth-bound paths are chosen on tune_skinny and judged on heldout_skinny:
    the same two classes (N <= 8 with M > 1, and M = 1 with N > 8), each shape at least 2^20 floats
    streamed, tunable, and no shape of any held-out set."""
    tune = shapes.SHAPE_SETS["tune_skinny"]
    held = {s for h in shapes.HELDOUT_SETS for s in shapes.SHAPE_SETS[h]}
    assert shapes.SETS["tune_skinny"].tunable and not set(tune) & held and len(set(tune)) == len(tune)
    assert all((N <= 8 and M > 1) or (M == 1 and N > 8) for M, N, K in tune)
    assert all(M * K + K * N >= 2**20 for M, N, K in tune)
    assert sum(N <= 8 for M, N, K in tune) >= 10 and sum(M == 1 for M, N, K in tune) >= 10


def test_small_sets_are_the_two_small_classes_and_share_no_shape():
    """heldout_small judges and tune_small tunes the small classes: small and mid problems
    (K <= 2048, 4096 < M*N <= 8M, M > 1 and N > 8) and tiny outputs (M*N <= 4096, K >= 16 max(M, N)),
    each shape in exactly one, at least 2^20 floats of operands; the held-out one shares no shape
    with any other set (tune_small has two of square's cubes) and has at least 20 small and 6 tiny
    ones (conditions written out here)."""
    everything_else = {s for name, ss in shapes.SETS.items() if name not in ("heldout_small", "tune_small", "all")
                       for s in ss.shapes}
    for name, want_small, want_tiny in (("heldout_small", 20, 6), ("tune_small", 15, 5)):
        got = shapes.SHAPE_SETS[name]
        small = [(M, N, K) for M, N, K in got if K <= 2048 and 4096 < M * N <= 8 * 2**20 and M > 1 and N > 8]
        tiny = [(M, N, K) for M, N, K in got if M * N <= 4096 and K >= 16 * max(M, N)]
        assert len(small) + len(tiny) == len(got) == len(set(got)), name
        # the module's small_class, which the judges read, says the same
        assert [shapes.small_class(*x) for x in small] == ["small and mid"] * len(small)
        assert [shapes.small_class(*x) for x in tiny] == ["tiny outputs"] * len(tiny)
        assert len(small) >= want_small and len(tiny) >= want_tiny, (name, len(small), len(tiny))
        assert all(M * K + K * N >= 2**20 for M, N, K in got), name
        assert name == "tune_small" or not set(got) & everything_else, name
        assert shapes.SETS[name].small and not shapes.SETS[name].bandwidth_bound
    assert not set(shapes.SHAPE_SETS["heldout_small"]) & set(shapes.SHAPE_SETS["tune_small"])
    assert shapes.SETS["tune_small"].tunable and not shapes.SETS["heldout_small"].tunable
    assert shapes.small_class(4096, 4096, 4096) == "" and shapes.small_class(1, 4096, 1) == ""


def test_asv_skinny_is_one_shape_per_weak_class_and_none_held_out():
    """The asv set of the bandwidth-bound and small classes: exactly one shape in each class
    (conditions written out here), large enough to stream (N <= 8 and M = 1: >= 16M floats of the
    big operand, where the device copy's bandwidth is the line), in no held-out set."""
    got = shapes.SHAPE_SETS["asv_skinny"]
    found = []
    for M, N, K in got:
        classes = [name for name, inside in (
            ("matrix times vectors", N <= 8 and M * K >= 16 * 2**20),
            ("one row", M == 1 and K * N >= 16 * 2**20),
            ("small", M > 1 and N > 8 and K <= 2048 and M * N <= 8 * 2**20 and M * N > 4096),
            ("tiny output", M * N <= 4096 and K >= 16 * max(M, N))) if inside]
        assert len(classes) == 1, ((M, N, K), classes)
        found += classes
        assert 4 * (M * K + K * N) >= 4 * 2**20, (M, N, K)           # sized by bytes: >= 2^20 floats
        assert max(M * K, K * N, M * N) <= MAX_ELEMENTS and K <= MAX_K_FP32, (M, N, K)
    assert sorted(found) == ["matrix times vectors", "one row", "small", "tiny output"]
    held = {s for h in shapes.HELDOUT_SETS for s in shapes.SHAPE_SETS[h]}
    assert not held & set(got)
    assert shapes.SETS["asv_skinny"].tunable and shapes.SETS["asv_skinny"].bandwidth_bound


def test_shape_set_returns_a_list_copy_and_unknown_names_list_the_known_ones():
    got = shapes.shape_set("odd")
    assert got == list(shapes.SHAPE_SETS["odd"]) and isinstance(got, list)
    got.clear()
    assert shapes.shape_set("odd")
    with pytest.raises(UsageError) as e:
        shapes.shape_set("squares")
    for name in SET_NAMES:
        assert name in str(e.value)


# ---- shapes files ----------------------------------------------------------------------------

def _write(tmp_path, text, name="shapes.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_shapes_file_lines_cubes_comments_and_blank_lines(tmp_path):
    path = _write(tmp_path, "# my shapes\n\n4096\n  256x256x131072   # long K\n3001X2999x3003\n\n")
    assert shapes.load_shapes_file(path) == [(4096, 4096, 4096), (256, 256, 131072), (3001, 2999, 3003)]


def test_shapes_file_csv_with_header_and_extra_columns(tmp_path):
    path = _write(tmp_path, "# exported\nshape,M,N,K,note\n1024x1024x16384,1024,1024,16384,a\n"
                            "x,7,9,11,b\n", "s.csv")
    assert shapes.load_shapes_file(path) == [(1024, 1024, 16384), (7, 9, 11)]
    assert shapes.load_shapes_file(_write(tmp_path, "m, n, k\n1,2,3\n", "t.csv")) == [(1, 2, 3)]


@pytest.mark.parametrize("text, lineno, bad", [
    ("4096\n\n12x34\n", 3, "12x34"),
    ("# c\n64,64,1024\n", 2, "64,64,1024"),          # digits with commas and no header: not a cube list
    ("1024\n0x5x5\n", 2, "0x5x5"),
    ("1024\nbig\n", 2, "big"),
    ("M,N,K\n1,2,3\n4,x,6\n", 3, "4,x,6"),
    ("M,N,K\n1,2\n", 2, "1,2"),
    ("M,N,K\n1,2,0\n", 2, "1,2,0"),
    ("M,N\n1,2\n", 1, "M,N"),
])
def test_shapes_file_bad_line_names_file_line_and_text(tmp_path, text, lineno, bad):
    path = _write(tmp_path, text)
    with pytest.raises(UsageError) as e:
        shapes.load_shapes_file(path)
    msg = str(e.value)
    assert f"{path}:{lineno}:" in msg and bad in msg, msg


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n   \n", "M,N,K\n# none\n"])
def test_shapes_file_without_shapes_is_a_usage_error(tmp_path, text):
    path = _write(tmp_path, text)
    with pytest.raises(UsageError, match="shapes file .* has"):
        shapes.load_shapes_file(path)


def test_shapes_file_missing_or_unreadable(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        shapes.load_shapes_file(str(tmp_path / "nope.txt"))
    with pytest.raises(UsageError, match="cannot read"):
        shapes.load_shapes_file(str(tmp_path))            # a directory
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UsageError, match="cannot read"):
        shapes.load_shapes_file(str(binary))


# ---- summarize -------------------------------------------------------------------------------

def _row(kernel, shape, status="ok", pct=None, precision="fp32", family=None, tflops=None):
    M, N, K = (int(x) for x in shape.split("x"))
    family = family or ("cublas" if kernel == "cublas" else "cuda")
    return Result(kernel=kernel, family=family, stage="s", group="tiled", variant="", shape=shape,
                  M=M, N=N, K=K, precision=precision, alpha=1.0, beta=0.0, status=status,
                  tflops=tflops if tflops is not None else (1.0 if status == "ok" else None),
                  pct_cublas=pct)


def _synthetic():
    return [
        _row("cublas", "1x1x1", tflops=10.0), _row("cublas", "2x2x2", tflops=20.0),
        _row("cublas", "3x3x3", tflops=30.0),
        _row("k_b", "1x1x1", pct=80.0), _row("k_b", "2x2x2", pct=200.0), _row("k_b", "3x3x3", pct=50.0),
        _row("k_a", "1x1x1", pct=25.0), _row("k_a", "2x2x2", status="FAILED"),
        _row("k_a", "3x3x3", status="error"),
        _row("k_c", "1x1x1", status="unsupported"), _row("k_c", "2x2x2", status="FAILED"),
        _row("k_b", "1x1x1", pct=90.0, precision="tf32"),
    ]


def test_summarize_geomean_worst_best_and_counts():
    summary = sweep.summarize(_synthetic())
    assert [(e["kernel"], e["precision"]) for e in summary] == [
        ("k_b", "fp32"), ("k_a", "fp32"), ("k_c", "fp32"), ("k_b", "tf32")]   # first-seen order, no cuBLAS
    b = summary[0]
    # by hand: (50 * 200 * 80) ** (1/3) = 800000 ** (1/3) = 92.832...
    assert b["geomean_pct"] == pytest.approx(92.83177667225558, rel=1e-12)
    assert b["geomean_pct"] != pytest.approx((50 + 200 + 80) / 3)            # not the arithmetic mean
    assert (b["worst_pct"], b["worst_shape"], b["best_pct"], b["best_shape"]) == (50.0, "3x3x3", 200.0, "2x2x2")
    assert (b["n_shapes"], b["n_ok"], b["n_failed"], b["n_timed"], b["flagged"]) == (3, 3, 0, 3, False)
    a = summary[1]
    assert (a["n_shapes"], a["n_ok"], a["n_failed"], a["n_timed"], a["flagged"]) == (3, 1, 2, 1, True)
    assert a["failed_shapes"] == ["2x2x2", "3x3x3"]
    assert a["worst_pct"] == a["best_pct"] == 25.0 and a["geomean_pct"] == pytest.approx(25.0, rel=1e-12)
    assert summary[3]["geomean_pct"] == 90.0 and summary[3]["n_shapes"] == 1
    for e in summary:
        assert tuple(e) == sweep.FIELDS


def test_summarize_no_timed_rows_gives_none_not_zero_or_nan():
    c = sweep.summarize(_synthetic())[2]
    assert (c["n_ok"], c["n_failed"], c["n_not_run"], c["n_timed"], c["flagged"]) == (0, 1, 1, 0, True)
    for key in ("geomean_pct", "worst_pct", "worst_shape", "best_pct", "best_shape"):
        assert c[key] is None, key
    # ok rows without a % (no cuBLAS at that shape) and unusable % values are not timed either
    rows = [_row("k", "1x1x1"), _row("k", "2x2x2", pct=float("nan")), _row("k", "3x3x3", pct=0.0)]
    e = sweep.summarize(rows)[0]
    assert (e["n_ok"], e["n_timed"], e["geomean_pct"], e["flagged"]) == (3, 0, None, False)


def test_summarize_accepts_json_dicts_like_results():
    rows = _synthetic()
    from_json = json.loads(json.dumps([r.as_dict() for r in rows]))
    assert sweep.summarize(from_json) == sweep.summarize(rows)
    assert sweep.summarize([]) == []


# ---- render ----------------------------------------------------------------------------------

def test_render_table_and_markdown():
    summary = sweep.summarize(_synthetic())
    table = sweep.render_summary(summary, "table")
    lines = table.splitlines()
    assert lines[1].split()[:3] == ["kernel", "precision", "shapes"]
    k_b = next(line for line in lines if line.startswith("k_b") and "fp32" in line)
    assert "92.8" in k_b and "50.0" in k_b and "200.0" in k_b
    # the worst and best shapes: a block of their own under the counts (one line would be ~150 wide)
    shapes = lines[lines.index("worst and best shapes"):]
    k_b_shapes = next(line for line in shapes if line.startswith("k_b") and "fp32" in line)
    assert k_b_shapes.split() == ["k_b", "fp32", "50.0", "3x3x3", "200.0", "2x2x2"]
    k_a = next(line for line in lines if line.startswith("k_a"))
    assert "2 !" in k_a and "FAILED or error" in table
    k_c = next(line for line in lines if line.startswith("k_c"))
    assert "nan" not in k_c.lower() and " -" in k_c and "no timed rows" in table
    md = sweep.render_summary(summary, "markdown")
    body = [line for line in md.splitlines() if line.startswith("| k_")]
    assert len(body) == 4 and all(line.count("|") == 15 for line in body)
    assert "no kernel rows" in sweep.render_summary([], "table")


def test_render_csv_and_json_round_trip():
    summary = sweep.summarize(_synthetic())
    rows = list(csv.DictReader(io.StringIO(sweep.render_summary(summary, "csv"))))
    assert [r["kernel"] for r in rows] == ["k_b", "k_a", "k_c", "k_b"]
    assert float(rows[0]["geomean_pct"]) == pytest.approx(summary[0]["geomean_pct"])
    assert rows[1]["failed_shapes"] == "2x2x2;3x3x3" and rows[2]["geomean_pct"] == ""
    assert json.loads(sweep.render_summary(summary, "json")) == summary
    with pytest.raises(UsageError, match="table"):
        sweep.render_summary(summary, "html")


# ---- plot ------------------------------------------------------------------------------------

def _many_kernels(n_kernels=14, n_shapes=12):
    rows = []
    for j in range(n_shapes):
        s = f"{64 * (j + 1)}x128x{1000 + j}"
        for prec in ("fp32", "tf32"):
            rows.append(_row("cublas", s, precision=prec, tflops=10.0 + (j * 7) % 5))
            for i in range(n_kernels):
                if (i + j) % 17 == 0:
                    rows.append(_row(f"k{i:02d}", s, status="FAILED", precision=prec))
                else:
                    rows.append(_row(f"k{i:02d}", s, pct=(i + 1) * 7.0 * (1 + 0.1 * ((i * j) % 5)),
                                     precision=prec, family="cuda" if i % 2 else "triton"))
    return rows


def test_plot_sweep_writes_a_png_atomically(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "sweep.png"
    path.write_bytes(b"old")
    assert sweep.plot_sweep(_many_kernels(), str(path)) == str(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.png"]    # no temp file left
    svg = tmp_path / "sweep.svg"
    sweep.plot_sweep(_synthetic(), str(svg), title="mine")
    assert b"<svg" in svg.read_bytes()[:500]


def test_plot_sweep_line_styles_are_unique_for_thirty_lines():
    from compare.outputs.plot import line_styles
    styles = line_styles(f"k{i} [fp32]" for i in range(30))
    assert len(set(styles.values())) == 30


def test_plot_sweep_refuses_nothing_to_plot_and_bad_suffix(tmp_path):
    pytest.importorskip("matplotlib")
    with pytest.raises(UsageError, match="nothing to plot"):
        sweep.plot_sweep([_row("cublas", "1x1x1", tflops=1.0), _row("k", "1x1x1", status="FAILED")],
                         str(tmp_path / "x.png"))
    with pytest.raises(UsageError, match="picture format"):
        sweep.plot_sweep(_synthetic(), str(tmp_path / "x.txt"))
    assert list(tmp_path.iterdir()) == []


def test_shape_order_puts_cublas_hardest_first():
    rows = [_row("cublas", "1x1x1", tflops=30.0), _row("cublas", "2x2x2", tflops=5.0),
            _row("cublas", "3x3x3", tflops=12.0)]
    from compare.outputs import sweep_plot
    assert sweep_plot._shape_order(rows, {"1x1x1", "2x2x2", "3x3x3"}) == ["2x2x2", "3x3x3", "1x1x1"]
    assert math.isclose(sweep.geomean([2.0, 8.0]), 4.0)


def test_every_default_shape_list_is_read_from_the_catalogue():
    """One place declares shapes: the CLI's group and interpret defaults, the profile's default
    and the asv suite's per-group sets are compare/harness/shapes.py's objects, not copies."""
    from benchmarks import gemm
    from compare import cli
    from compare.harness import registry
    from compare.outputs import profile, selection
    assert selection.GROUP_DEFAULTS is shapes.GROUP_DEFAULTS       # the CLI's defaults: selection.select
    assert selection.INTERPRET_DEFAULTS is shapes.INTERPRET_DEFAULTS
    assert cli.INTERPRET_SHAPES is shapes.INTERPRET_DEFAULTS
    assert profile.DEFAULT_SHAPE == shapes.PROFILE_DEFAULT
    assert gemm.SHAPE_SETS is shapes.ASV_GROUP_SETS
    assert set(shapes.GROUP_DEFAULTS) == set(registry.GROUPS)
    for groups in shapes.ASV_GROUP_SETS.values():
        assert set(groups) == set(registry.GROUPS)
