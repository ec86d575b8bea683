"""The rows of reproduce/measure-unchanged's runs reduced for a results folder: what
unchanged_summary.py judges (times, % of cuBLAS, status, clock) and a hash of each row's
configuration in place of the configuration (8.6 MB of JSON for 4 runs of 11 sets -> ~1 MB).

The hash reads the old tree's spellings as today's (option b_operand -> b_transpose,
decomposition "sk" -> "hybrid"), so a row's hash is the same before and after exactly when the
same kernel configuration ran; unsupported rows (no time either side) are dropped.

    python reproduce/unchanged_reduce.py RUN_DIR OUT_DIR     # every RUN_DIR/*.json -> OUT_DIR
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

KEEP = ("kernel", "shape", "precision", "status", "reason", "median_ms", "iqr_ms", "pct_cublas", "rel_err",
        "sm_clock_mhz")
RENAMED_KEYS = {"b_operand": "b_transpose"}
RENAMED_VALUES = {("decomposition", "sk"): "hybrid"}
NOTE = ("rows reduced to " + ", ".join(KEEP) + " and config_sha1 (sha1 of the row's config as sorted JSON, "
        "the old names b_operand and decomposition=sk read as b_transpose and hybrid); unsupported rows dropped")


def config_sha1(config: dict) -> str:
    today = {}
    for key, value in (config or {}).items():
        key = RENAMED_KEYS.get(key, key)
        today[key] = RENAMED_VALUES.get((key, value), value) if isinstance(value, str) else value
    return hashlib.sha1(json.dumps(today, sort_keys=True).encode()).hexdigest()[:12]


def reduce_run(doc: dict) -> dict:
    rows = [{**{k: r.get(k) for k in KEEP}, "config_sha1": config_sha1(r.get("config"))}
            for r in doc["results"] if r.get("status") != "unsupported"]
    return {"created": doc.get("created"), "command": doc.get("command"), "environment": doc.get("environment"),
            "note": NOTE, "results": rows}


def main(src: str, dst: str) -> int:
    names = sorted(n for n in os.listdir(src) if n.endswith(".json"))
    if not names:
        print(f"unchanged_reduce: no .json runs in {src}", file=sys.stderr)
        return 1
    os.makedirs(dst, exist_ok=True)
    for name in names:
        with open(os.path.join(src, name)) as f:
            doc = reduce_run(json.load(f))
        tmp = os.path.join(dst, name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=0)
        os.replace(tmp, os.path.join(dst, name))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python reproduce/unchanged_reduce.py RUN_DIR OUT_DIR")
    sys.exit(main(sys.argv[1], sys.argv[2]))
