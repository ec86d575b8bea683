"""triton_kernels/_triton_key.py: the stored Triton cache key is the one Triton computes, it is
found again by a fresh process, and any change to Triton's files names another key file."""
from __future__ import annotations

import os
import subprocess
import sys


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import sys, triton.runtime.cache as c, triton.runtime.autotuner as a
original = c.triton_key
from triton_kernels import _triton_key
key = _triton_key.reuse()
assert key and c.triton_key() == key and a.triton_key() == key, (key, c.triton_key())
print(key, getattr(original, "stored_key", None) is None)
"""


def _probe(cache_dir, extra_env=None):
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache_dir), PYTHONPATH=REPO)
    env.pop("TRITON_INTERPRET", None)
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=REPO,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[0]


def test_the_stored_key_is_tritons_own_and_a_fresh_process_reads_it(tmp_path):
    import triton.runtime.cache as cache
    from triton_kernels import _triton_key
    real = subprocess.run([sys.executable, "-c", "import triton.runtime.cache as c; print(c.triton_key())"],
                          capture_output=True, text=True, timeout=300).stdout.strip()
    first = _probe(tmp_path)                       # computes and stores
    assert first == real
    stored = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    assert len(stored) == 1 and open(stored[0]).read() == real
    assert os.path.basename(stored[0]) == _triton_key.stat_digest(_triton_key._inputs(cache))
    # a fresh process finds the file: a planted value proves it was read, not recomputed
    with open(stored[0], "w") as f:
        f.write("planted-key")
    assert _probe(tmp_path) == "planted-key"


def test_a_changed_triton_file_names_another_key_file(tmp_path):
    from triton_kernels import _triton_key
    files = []
    for i in range(3):
        p = tmp_path / f"f{i}.py"
        p.write_text("x = 1\n")
        files.append(str(p))
    before = _triton_key.stat_digest(files)
    assert _triton_key.stat_digest(files) == before
    os.utime(files[1], ns=(1, 1))
    assert _triton_key.stat_digest(files) != before
    (tmp_path / "f2.py").write_text("x = 22\n")
    assert _triton_key.stat_digest(files) not in (before,)


def test_a_cache_that_cannot_be_written_leaves_the_key_right(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    real = subprocess.run([sys.executable, "-c", "import triton.runtime.cache as c; print(c.triton_key())"],
                          capture_output=True, text=True, timeout=300).stdout.strip()
    assert _probe(not_a_dir) == real
