"""Why an asv benchmark point failed: the note benchmarks/gemm.py leaves and compare.ci.gate reads.

asv records a failed point as null and keeps no message (its result files drop stderr). So when
a point's kernel FAILED, errored, faulted (a sticky CUDA error: FAULT) or hung (no result within
the kernel timeout: HUNG, the benchmark process exits at once instead of waiting for asv's
timeout), the benchmark appends one JSON line to ``<results_dir>/failures/<sha8>.jsonl``:
benchmark, params, kernel, status, reason, host. The gate's FAILING rows then name the kernel
and why. The folder holds no machine.json, so asv and compare.ci.asv_results do not read it as
results; a note only explains a null, it never stands in for a number.

Inside asv the benchmark process knows the commit (ASV_COMMIT) and the folder asv was started
in (ASV_CONF_DIR, whose asv.conf.json names the results dir); outside asv no note is written.
"""
from __future__ import annotations

import json
import os
import platform
import re
from typing import Optional

FOLDER = "failures"


def path(results_dir: str, commit: str) -> str:
    return os.path.join(results_dir, FOLDER, f"{commit[:8]}.jsonl")


def add(results_dir: str, commit: str, benchmark: str, params, kernel: str, status: str, reason: str) -> str:
    """Append one note (one write of one line in append mode: notes of concurrent points never
    interleave mid-line)."""
    p = path(results_dir, commit)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    line = json.dumps({"benchmark": benchmark, "params": [str(x) for x in params], "kernel": kernel,
                       "status": status, "reason": reason, "host": platform.node()}) + "\n"
    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return p


def read(results_dir: str, commit: str) -> dict:
    """{(benchmark, params tuple): note} for ``commit`` (the last note of a point wins); {} when
    there are none. Lines that are not notes are skipped."""
    out = {}
    candidates = [path(results_dir, commit)]
    folder = os.path.join(results_dir, FOLDER)
    if os.path.isdir(folder):   # the gate may hold a longer or shorter prefix than 8
        candidates += [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                       if f.endswith(".jsonl") and (commit.startswith(f[:-6]) or f[:-6].startswith(commit))]
    for p in dict.fromkeys(candidates):
        try:
            lines = open(p, encoding="utf-8").read().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                n = json.loads(line)
                out[(n["benchmark"], tuple(n["params"]))] = n
            except (ValueError, KeyError, TypeError):
                continue
    return out


def describe(note: dict) -> str:
    """'cuda.05_blocktile_2d FAULT: illegal memory access (...)', cut to one line of the table."""
    reason = " ".join(str(note.get("reason", "")).split())
    text = f"{note.get('kernel', '?')} {note.get('status', '?')}: {reason}"
    return text if len(text) <= 400 else text[:397] + "..."


def results_dir_of_asv_run() -> Optional[str]:
    """The results dir of the asv run this process is part of (None outside asv)."""
    conf_dir = os.environ.get("ASV_CONF_DIR")
    if not conf_dir or not os.environ.get("ASV_COMMIT"):
        return None
    results = ".asv/results"
    try:
        text = open(os.path.join(conf_dir, "asv.conf.json"), encoding="utf-8").read()
        # asv.conf.json may carry // comments
        conf = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
        results = conf.get("results_dir", results)
    except (OSError, ValueError):
        pass
    return os.path.join(conf_dir, results)
