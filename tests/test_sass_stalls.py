"""reproduce/sass_stalls.py on a source table written here: shares computed by hand."""
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import sass_stalls  # noqa: E402

HEADER = '"Address","Source","Warp Stall Sampling (All Samples)","stall_long_sb","stall_math","stall_long_sb (Not Issued)"'


def _table(path, rows, gz=False):
    text = "==PROF== Connected to process 1\nGPU: some log line\n" + HEADER + "\n" + "\n".join(
        f'"0x{i:x}","{src}","{s}","{lsb}","{math}","0"' for i, (src, s, lsb, math) in enumerate(rows)) + "\n"
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def test_shares_by_reason_opcode_and_instruction(tmp_path, capsys):
    # 100 samples: an LDSM with 60 (50 long scoreboard), two HMMAs with 30 and 10 (math 25 + 5)
    _table(tmp_path / "k.csv.gz", [("      LDSM.16.M88.4 R72, [R179]", 60, 50, 0),
                                    ("      HMMA.1688.F32.TF32 R4, R64, R162, R4", 30, 0, 25),
                                    ("@P0   HMMA.1688.F32.TF32 R8, R64, R162, R8", 10, 0, 5)], gz=True)
    assert sass_stalls.main([str(tmp_path / "k.csv.gz"), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "samples 100, instructions 3" in out
    assert "by reason: long_sb 50.0%, math 30.0%" in out
    assert "by opcode: LDSM 60.0%, HMMA 40.0%" in out     # the predicated HMMA counts as HMMA
    assert " 60.0%  LDSM.16.M88.4 R72, [R179]" in out and "long_sb 50" in out
    assert "R8, R64" not in out                            # --top 2 leaves the third out


def test_a_file_without_the_source_table_exits_2(tmp_path, capsys):
    (tmp_path / "log.csv").write_text("==PROF== no kernels were profiled\n")
    assert sass_stalls.main([str(tmp_path / "log.csv")]) == 2
    assert "no source table" in capsys.readouterr().out
