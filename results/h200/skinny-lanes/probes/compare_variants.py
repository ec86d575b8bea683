"""Variant against the first (base) on the same shapes: best of each variant's rounds, per shape
time ratio and % of the speed of light (pct_sol), then geomean / min / max and each variant's A/A.

    python compare_variants.py DIR "base other ..." [ROUNDS]   # reads DIR/NAME-ROUND.json[.gz]
"""
import gzip
import json, math, os, statistics, sys
R = sys.argv[1]; names = sys.argv[2].split(); rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
def cells(p, kernel="cuda.11_stream_k"):
    if not os.path.exists(p):
        p += ".gz"
    d = json.load((gzip.open if p.endswith(".gz") else open)(p, "rt")); m = d["matrix"]
    row = next(r for r in m["rows"] if r["kernel"] == kernel)
    return m["shapes"], [c.get("tflops") for c in row["cells"]], [c.get("pct_sol") for c in row["cells"]]
data = {}
for n in names:
    for r in range(1, rounds + 1):
        try: shapes, t, s = cells(f"{R}/{n}-{r}.json")
        except FileNotFoundError: continue
        data.setdefault(n, []).append((t, s))
base = names[0]
bt = [max(x[0][i] for x in data[base]) for i in range(len(shapes))]
print("shape".ljust(18), "".join(n.rjust(16) for n in names))
for i, sh in enumerate(shapes):
    line = sh.ljust(18)
    for n in names:
        ts = [x[0][i] for x in data[n]]; ss = [x[1][i] for x in data[n]]
        line += f"{max(ts)/bt[i]:7.3f} {max(ss):5.1f}%sol"[:16].rjust(16)
    print(line)
for n in names:
    rs = [max(x[0][i] for x in data[n]) / bt[i] for i in range(len(shapes))]
    aa = [min(x[0][i] for x in data[n]) / max(x[0][i] for x in data[n]) for i in range(len(shapes))]
    print(n, "geomean vs base %.3f min %.3f max %.3f; A/A min %.3f" % (math.exp(statistics.mean(map(math.log, rs))), min(rs), max(rs), min(aa)))
