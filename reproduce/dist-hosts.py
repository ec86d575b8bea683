"""Does runner.run measure slower on a Dask worker than in one process?

    python reproduce/dist-hosts.py [SPEC] [MODES]     (on a GPU box with dask/distributed installed)

The same pairs (SPEC, default loguniform:100:1: cuda.11_stream_k and triton.stream_k in fp32
beside cuBLAS, --budget 0.25) measured by runner.run in one loop, hosted in turn by: this
process's main thread (main), a worker thread (thread), a worker thread beside an asyncio loop
with a 20 ms tick and a 0.5 s psutil poll (loop: what a Dask worker's event loop does), the
harness's isolation worker process as the one-process CLI drives it (child), a Dask worker's
task thread (dask: the sweep's --workers 1 host) and the isolation worker driven from a Dask task
(daskchild). MODES is a comma list; the first run compiles. Prints and writes (EXP_OUT, default
dist-hosts.json) one JSON line per run: wall (runner.run alone), samples, GPU ms sampled.
"""
import asyncio
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

SPEC = sys.argv[1] if len(sys.argv) > 1 else "loguniform:100:1"
ORDER = (sys.argv[2] if len(sys.argv) > 2 else "main,main,thread,loop,child,dask,daskchild,main,child,dask").split(",")


def build():
    from compare import cli
    from compare.outputs import selection
    args = cli.build_parser().parse_args(["--distribution", SPEC, "--kernel", "cuda.11_stream_k", "--kernel",
                                          "triton.stream_k", "--precision", "fp32", "--budget", "0.25", "--quiet"])
    sel = selection.select(args)
    return sel.pairs, sel.options, {"budget_s": 0.25, "target_noise": args.target_noise}


def go(execute=None):
    from compare.harness import runner
    pairs, opts, kw = build()
    t = time.perf_counter()
    rows = runner.run(pairs, options=opts, measure_kw=kw, execute=execute)
    wall = time.perf_counter() - t
    ok = [r for r in rows if r.status == "ok"]
    return {"wall": round(wall, 3), "rows": len(rows), "ok": len(ok), "samples": sum(r.samples or 0 for r in ok),
            "gpu_ms": round(sum((r.samples or 0) * (r.median_ms or 0) for r in ok), 1),
            "pid": os.getpid(), "thread": threading.current_thread().name}


def go_child():
    from compare.harness.worker import Worker
    w = Worker().start()
    w.wait_ready()
    try:
        return go(w.run_kernel)
    finally:
        w.close()


def loop_thread():
    loop = asyncio.new_event_loop()
    def tick():
        sum(range(2000))
        loop.call_later(0.02, tick)
    def monitor():
        try:
            import psutil
            psutil.cpu_percent()
            psutil.virtual_memory()
            psutil.net_io_counters()
            psutil.disk_io_counters()
        except Exception:
            pass
        loop.call_later(0.5, monitor)
    loop.call_soon(tick)
    loop.call_soon(monitor)
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return loop


def main():
    os.environ.setdefault("PYTHONPATH", os.getcwd())
    out = []
    cluster = client = None
    for mode in ORDER:
        t = time.perf_counter()
        if mode == "main":
            r = go()
        elif mode == "thread":
            r = ThreadPoolExecutor(1).submit(go).result()
        elif mode == "loop":
            loop = loop_thread()
            r = ThreadPoolExecutor(1).submit(go).result()
            loop.call_soon_threadsafe(loop.stop)
        elif mode == "child":
            r = go_child()
        elif mode in ("dask", "daskchild"):
            if client is None:
                from distributed import Client
                from compare.outputs.dask_cluster import local_cluster
                cluster = local_cluster(1, False, ["0"])
                client = Client(cluster)
            r = client.submit(go_child if mode == "daskchild" else go, pure=False).result()
        r["mode"] = mode
        r["outer"] = round(time.perf_counter() - t, 3)
        print(json.dumps(r), flush=True)
        out.append(r)
    if client:
        client.close()
        cluster.close()
    json.dump(out, open(os.environ.get("EXP_OUT", "dist-hosts.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
