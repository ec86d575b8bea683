"""The asv suite: literal classes whose params are read from compare.harness.registry
(benchmarks/gemm.py declares the classes, benchmarks/params.py their params, benchmarks/tracks.py
what a point does; docs/asv.md)."""
import os as _os
import sys as _sys

if not _os.environ.get("ASV_ENV_TYPE"):
    # Not inside an environment asv built (there asv sets ASV_ENV_TYPE and has installed the
    # commit it measures): `asv run --python=same`, a history worktree, pytest. Measure the
    # checkout these benchmarks live in, ahead of any installed copy.
    _sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
