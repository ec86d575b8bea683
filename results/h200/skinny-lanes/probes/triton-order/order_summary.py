"""triton.stream_k skinny_order=in_order against rotated per row, each against its run's cuBLAS fp32:
    python results/h200/skinny-lanes/probes/triton-order/order_summary.py   (summary.txt)
"""
import gzip, json, os
HERE = os.path.dirname(os.path.abspath(__file__))

def load(p):
    d = json.load(gzip.open(p, "rt")); res = {}
    for r in d["results"]:
        res[(r["kernel"], r["shape"])] = r
    return d, res
for part in ("tuning", "heldout", "fresh"):
    d, res = load(os.path.join(HERE, f"order-{part}.json.gz"))
    shapes = d["matrix"]["shapes"]
    print(f"== {part}")
    for s in shapes:
        a = res[("triton.stream_k[skinny_order=in_order]", s)]; b = res[("triton.stream_k[skinny_order=rotated]", s)]
        cb = res[("cublas", s)]
        if a["status"] != "ok" or b["status"] != "ok":
            print(s, a["status"], b["status"]); continue
        ca = a["config"]
        splits = ca.get("k_splits")
        r = a["median_ms"] / b["median_ms"]
        print(f"{s:16s} splits {splits} grid {ca.get('grid')} in_order {100*cb['median_ms']/a['median_ms']:6.1f}% rotated {100*cb['median_ms']/b['median_ms']:6.1f}%  rotated speedup {r:.3f}")
