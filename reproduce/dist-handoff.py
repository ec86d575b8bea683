"""Where a --workers 1 sweep's time between shapes goes:

    python reproduce/dist-handoff.py [--interpret]      (GPU box with dask installed; --interpret: CPU)

Pure Dask task latency on a one-worker local cluster (worker-saturation 1.0 as the sweep runs it,
and 2.0), then a 60-shape sweep (cuda.11_stream_k + triton.stream_k fp32, --budget 0.25, after a
run that fills the compile caches) with timestamps added to the sweep: the worker's idle time
between two shapes, the task's time outside runner.run, when the client has each result. The
timestamps are added to a throwaway clone of this checkout (made under /tmp), never to it.
"""
import os
import statistics
import subprocess
import sys
import tempfile

INTERPRET = "--interpret" in sys.argv
SWEEP_MODULE = "compare/outputs/distributed.py"
# (text in SWEEP_MODULE, what replaces it): timestamps on each task and on the client's side.
STAMPS = (
    ("    global _DEAD_CONTEXT\n    if job.deadline",
     "    global _DEAD_CONTEXT\n    _enter = time.time()\n    if job.deadline"),
    ('    return {"index": job.index, "shape": job.shape, "rows": rows, "wall_s": wall,',
     '    return {"_enter": _enter, "_wall": wall, "_exit": time.time(),\n'
     '            "index": job.index, "shape": job.shape, "rows": rows, "wall_s": wall,'),
    ("        res = fut.result() if exc is None else {}",
     "        _r0 = time.time()\n"
     "        res = fut.result() if exc is None else {}\n"
     '        STAMPS.append((res.get("_enter"), res.get("_exit"), res.get("_wall"), _r0, time.time()))'),
    ("def run_sweep(", "STAMPS = []\n\n\ndef run_sweep("),
    ("            progress.finished(job.shape, who, note)",
     "            progress.finished(job.shape, who, note)\n"
     "            STAMPS[-1] = STAMPS[-1] + (time.time(),)"),
)

DASK_LATENCY = '''
import sys, time, dask
from distributed import Client, LocalCluster, as_completed
from compare.outputs.dask_cluster import SCHEDULER_CONFIG

def work(i, dur):
    t = time.perf_counter()
    while time.perf_counter() - t < dur:
        pass
    return {"i": i, "rows": [dict(a=1, b=2.0, c="x" * 200) for _ in range(3)]}

if __name__ == "__main__":
    sat = float(sys.argv[1])
    with dask.config.set({**SCHEDULER_CONFIG, "distributed.scheduler.worker-saturation": sat}):
        cl = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, memory_limit=0,
                          dashboard_address=None)
        c = Client(cl)
        n, dur = 60, 0.05
        t = time.perf_counter()
        for f in as_completed([c.submit(work, i, dur, pure=False) for i in range(n)]):
            f.result()
            f.release()
        tot = time.perf_counter() - t
        print(f"pure dask, saturation {sat}: {(tot - n * dur) / n * 1000:.2f} ms a task beyond its 50 ms")
        c.close()
        cl.close()
'''


def in_clone() -> int:
    """Clone this checkout under /tmp and run this script there, where it may edit the sweep."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    clone = tempfile.mkdtemp(prefix="dist-handoff-")
    subprocess.run(["git", "clone", "-q", root, clone], check=True)
    return subprocess.run([sys.executable, os.path.join(clone, "reproduce", "dist-handoff.py"), "--in-clone",
                           *sys.argv[1:]], cwd=clone, env=dict(os.environ, PYTHONPATH=clone)).returncode


def add_stamps() -> None:
    text = open(SWEEP_MODULE).read()
    for old, new in STAMPS:
        if old not in text:
            sys.exit(f"{SWEEP_MODULE} has changed: no {old.strip()[:60]!r} to stamp")
        text = text.replace(old, new, 1)
    with open(SWEEP_MODULE, "w") as f:
        f.write(text)


def dask_latency(sat: float) -> None:
    path = os.path.join(tempfile.mkdtemp(prefix="dask-latency-"), "latency.py")
    with open(path, "w") as f:
        f.write(DASK_LATENCY)
    p = subprocess.run([sys.executable, path, str(sat)], capture_output=True, text=True, timeout=120)
    print("\n".join(line for line in p.stdout.splitlines() if "pure dask" in line) or p.stderr[-800:])


def ms(v: list) -> str:
    return (f"median {statistics.median(v) * 1e3:.2f} ms, mean {statistics.mean(v) * 1e3:.2f} ms, "
            f"max {max(v) * 1e3:.1f} ms")


def probe() -> None:
    dask_latency(1.0)
    dask_latency(2.0)
    spec = "interpret_tiny:40:1" if INTERPRET else "loguniform:60:1"
    base = ["--distribution", spec, "--kernel", "triton.stream_k", "-q", "--format", "json"]
    base += ["--interpret"] if INTERPRET else ["--kernel", "cuda.11_stream_k", "--precision", "fp32",
                                              "--budget", "0.25"]
    out = tempfile.mkdtemp(prefix="dist-handoff-out-")
    subprocess.run([sys.executable, "-m", "compare", *base, "-o", os.path.join(out, "warm.json")],
                   capture_output=True)                                   # fills the compile caches
    from compare.cli import main
    from compare.outputs import distributed
    try:
        main([*base, "--workers", "1", "-o", os.path.join(out, "probe.json")])
    except SystemExit:
        pass
    t = distributed.STAMPS
    print(f"{len(t)} shapes")
    print("worker idle between tasks (task exit -> next task entry):",
          ms([t[i][0] - t[i - 1][1] for i in range(1, len(t))]))
    print("task time outside runner.run:", ms([(s[1] - s[0]) - s[2] for s in t]))
    print("task exit -> client has the result:", ms([s[4] - s[1] for s in t]))
    print("client's own handling (checkpoint, progress):", ms([s[5] - s[4] for s in t if len(s) > 5]))


if __name__ == "__main__":
    if "--in-clone" not in sys.argv:
        sys.exit(in_clone())
    add_stamps()
    probe()
