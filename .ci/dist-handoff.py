"""Where a --workers 1 sweep's time between shapes goes (issue 26):

    python .ci/dist-handoff.py [--interpret]      (GPU box with dask installed; --interpret: CPU)

Pure Dask task latency on a one-worker local cluster (worker-saturation 1.0 as the sweep runs it,
and 2.0), then a 60-shape sweep (cuda.11_stream_k + triton.stream_k fp32, --budget 0.25, after a
run that fills the compile caches) with timestamps added to the sweep: the worker's idle time
between two shapes, the task's time outside runner.run, when the client has each result. The
timestamps are added to a throwaway clone of this checkout (made under /tmp), never to it.
"""
import os, subprocess, sys, tempfile
INTERPRET = "--interpret" in sys.argv
P = "compare/outputs/distributed.py"
if __name__ == "__main__" and "--in-clone" not in sys.argv:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    clone = tempfile.mkdtemp(prefix="dist-handoff-")
    subprocess.run(["git", "clone", "-q", root, clone], check=True)
    sys.exit(subprocess.run([sys.executable, os.path.join(clone, ".ci", "dist-handoff.py"), "--in-clone", *sys.argv[1:]],
                            cwd=clone, env=dict(os.environ, PYTHONPATH=clone)).returncode)
s = open(P).read()
if "_T = []" not in s and "--in-clone" in sys.argv:
    s = s.replace('''    global _DEAD_CONTEXT
    if job.deadline''', '''    global _DEAD_CONTEXT
    _enter = time.time()
    if job.deadline''', 1)
    s = s.replace('''    return {"index": job.index, "shape": job.shape, "rows": rows, "wall_s": wall,''',
                  '''    return {"_enter": _enter, "_wall": wall, "_exit": time.time(), "index": job.index, "shape": job.shape, "rows": rows, "wall_s": wall,''', 1)
    s = s.replace('''            res = fut.result() if exc is None else {}''', '''            _r0 = time.time()
            res = fut.result() if exc is None else {}
            _T.append((res.get("_enter"), res.get("_exit"), res.get("_wall"), _r0, time.time()))''', 1)
    s = s.replace('''def run_sweep(''', '''_T = []


def run_sweep(''', 1)
    s = s.replace('''            progress.shape_done(job.shape, label or worker, note)''', '''            progress.shape_done(job.shape, label or worker, note)
            _T[-1] = _T[-1] + (time.time(),)''', 1)
    open(P, "w").write(s)


def dask_latency(sat):
    code = f'''
import time, dask
from distributed import Client, LocalCluster, as_completed
from compare.outputs.dask_cluster import SCHEDULER_CONFIG
def work(i, dur):
    t = time.perf_counter()
    while time.perf_counter() - t < dur: pass
    return {{"i": i, "rows": [dict(a=1, b=2.0, c="x" * 200) for _ in range(3)]}}
if __name__ == "__main__":
    cfg = dict(SCHEDULER_CONFIG); cfg["distributed.scheduler.worker-saturation"] = {sat}
    with dask.config.set(cfg):
        cl = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, memory_limit=0, dashboard_address=None)
        c = Client(cl); n, dur = 60, 0.05; t = time.perf_counter()
        for f in as_completed([c.submit(work, i, dur, pure=False) for i in range(n)]):
            f.result(); f.release()
        tot = time.perf_counter() - t
        print(f"pure dask, saturation {sat}: {{(tot - n*dur)/n*1000:.2f}} ms a task beyond its 50 ms")
        c.close(); cl.close()
'''
    open("/tmp/dask_latency.py", "w").write(code)
    p = subprocess.run([sys.executable, "/tmp/dask_latency.py"], capture_output=True, text=True, timeout=120)
    print([l for l in p.stdout.splitlines() if "pure dask" in l] or p.stderr[-800:])


def main_probe():
    dask_latency(1.0)
    dask_latency(2.0)
    base = ["--distribution", "interpret_tiny:40:1" if INTERPRET else "loguniform:60:1", "--kernel", "triton.stream_k", "-q", "--format", "json"]
    base += ["--interpret"] if INTERPRET else ["--kernel", "cuda.11_stream_k", "--precision", "fp32", "--budget", "0.25"]
    subprocess.run([sys.executable, "-m", "compare", *base, "-o", "/tmp/probe-warm.json"], capture_output=True)  # compiles
    for f in ("/tmp/probe.json", "/tmp/probe.json.checkpoint.jsonl"):
        if os.path.exists(f):
            os.remove(f)
    from compare.outputs import distributed as D
    from compare.cli import main
    try:
        main([*base, "--workers", "1", "-o", "/tmp/probe.json"])
    except SystemExit:
        pass
    T = D._T
    import statistics as st
    gaps = [T[i][0] - T[i - 1][1] for i in range(1, len(T))]
    inside = [(t[1] - t[0]) - t[2] for t in T]
    recv = [t[4] - t[1] for t in T]
    client = [t[5] - t[4] for t in T if len(t) > 5]
    ms = lambda v: f"median {st.median(v)*1e3:.2f} ms, mean {st.mean(v)*1e3:.2f} ms, max {max(v)*1e3:.1f} ms"
    print(f"{len(T)} shapes")
    print("worker idle between tasks (task exit -> next task entry):", ms(gaps))
    print("task time outside runner.run:", ms(inside))
    print("task exit -> client has the result:", ms(recv))
    print("client's own handling (checkpoint, progress):", ms(client))


if __name__ == "__main__":
    main_probe()
