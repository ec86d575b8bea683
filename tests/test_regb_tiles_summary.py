"""reproduce/regb_tiles_summary.py on forced-tile rows whose numbers are worked out by hand."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import regb_tiles_summary as S  # noqa: E402


def _rows():
    # (shape, {tm: ms}, {tm: %}, default row). Shape 251x3576x6545 is picked 64 at the guessed
    # speeds and 128 at 0.9 / 0.6 (tests/test_cuda_compile.py); 8192x8192x8192 256 at both.
    return [("251x3576x6545", {256: 3.0, 128: 1.0, 64: 2.0}, {256: 40.0, 128: 120.0, 64: 60.0},
             {"pct_cublas": 60.0, "config": {"tile": "64x128x32s8.regb"}}),
            ("8192x8192x8192", {256: 1.0, 128: 2.0, 64: 4.0}, {256: 90.0, 128: 45.0, 64: 22.5},
             {"pct_cublas": 90.0, "config": {"tile": "256x128x32s4.regb"}})]


def test_tiles_oracle_and_a_candidate():
    assert S.model_pick(251, 3576, 6545, "tf32", S.GUESSED["tf32"]) == 64
    assert S.model_pick(251, 3576, 6545, "tf32", {256: 1.0, 128: 0.9, 64: 0.6}) == 128
    # N % 4 != 0: 128 or 64 rows pad B by a copy, 256 rows read it as stored (regb_tile_seconds).
    assert S.model_pick(251, 3575, 6545, "tf32", {256: 1.0, 128: 0.9, 64: 0.6}) == 256
    text = "\n".join(S.summarize(_rows(), "tf32", [{256: 1.0, 128: 0.9, 64: 0.6}]))
    # tile 128 forced: (120, 45) -> sqrt(5400) = 73.5, worst 45.
    assert "tile 128 rows forced: % of cuBLAS geomean 73.5, worst 45.0" in text
    # default (60, 90) -> sqrt(5400) = 73.5; fastest tile (120, 90) -> sqrt(10800) = 103.9;
    # default time / fastest: (2.0 / 1.0, 1.0 / 1.0) -> sqrt(2) = 1.4142.
    assert "default: geomean 73.5, worst 60.0; the fastest tile per shape: geomean 103.9, worst 90.0; " \
           "default time / fastest 1.4142" in text
    # The candidate moves one pick (64 -> 128): 2.0 / 1.0 and 1.0 -> 1.4142, none slower, % (120, 90).
    assert "speeds 256: 1.0 / 128: 0.9 / 64: 0.6: 1 picks moved, time of the guessed speeds' pick / this pick " \
           "1.4142, 0 shapes > 3% slower (worst 1.000), % of cuBLAS geomean 103.9, worst 90.0" in text


def test_cp_async_speed_lines_time_each_candidates_pick():
    from cuda_kernels import heuristics as H
    # 230x326x3059 (N % 4 != 0, one row of 256-row tiles): the rule picks 256 rows at cp_async speed
    # 1.0 and 64 at 0.7 (tests/test_cuda_compile.py); 8192x8192x8192 (N % 4 == 0) 256 at both.
    rows = [("230x326x3059", {256: 3.0, 128: 2.5, 64: 2.0}, {}, {}),
            ("8192x8192x8192", {256: 1.0, 128: 2.0, 64: 4.0}, {}, {})]
    lines = S.cp_async_lines(rows, "tf32", [1.0, 0.7])
    # 1.0: picks (256, 256): 3.0 / 2.0 and 1.0 / 1.0 -> sqrt(1.5) = 1.2247; 0.7: (64, 256) -> 1.0000,
    # one pick moved, 3.0 / 2.0 = 1.5x faster for it (none slower).
    assert lines[0] == ("  cp_async speed 1.0: time of the rule's pick / the fastest tile 1.2247; "
                        "0 picks moved from speed 1.0, 0 of them > 3% slower")
    assert lines[1] == ("  cp_async speed 0.7: time of the rule's pick / the fastest tile 1.0000; "
                        "1 picks moved from speed 1.0, 0 of them > 3% slower")
    assert H.REGB_CP_ASYNC_SPEED == 0.7   # restored
