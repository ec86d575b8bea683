"""The mma.sync / FFMA ceiling probe (cuda_kernels/probes/mma_peak.py). Without a GPU: the kernels
compile with nvcc for sm_80 and sm_90 without spills, and their timed loop is the measured
instruction only (SASS through nvdisasm) plus the loop's counter, compare and branch; NVRTC takes the
source as CuPy will; the closed form the host checks against matches the kernel's fragment slots
and stays exact in fp32; bad arguments exit 2 before any GPU work; the sweep on a stand-in device
computes TFLOP/s, reports a wrong sum as FAILED and writes its JSON atomically. On a GPU (marker
``gpu``): the smallest sweep passes its check with a positive rate."""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

from compare.harness import gpuinfo
from cuda_kernels import loader, resources
from cuda_kernels.probes import mma_peak as probe

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_nvcc = pytest.mark.skipif(resources.nvcc_path() is None, reason="nvcc not found (no CUDA toolkit here)")
NAMES = [f"{probe.INSTRS[i].kernel}<{c}>" for i in probe.INSTRS for c in probe.CHAINS]
SASS_OP = {"mma": "HMMA.1688.F32.TF32", "ffma": "FFMA"}
# What a loop may hold beside the measured instruction: its counter, compare and branch (sm_80
# exits through CALL.REL.NOINC), and the NOPs ptxas pads dependent HMMAs with.
OVERHEAD = ("IADD3", "UIADD3", "ISETP", "UISETP", "BRA", "CALL.REL.NOINC", "NOP")


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def compiled(request, tmp_path_factory):
    """(arch, ptxas report, SASS or None without nvdisasm) for every instantiation, one nvcc run."""
    nvcc = resources.nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc not found (no CUDA toolkit here)")
    arch, tmp = request.param, tmp_path_factory.mktemp(request.param)
    src = tmp / "probe.cu"
    src.write_text(loader.source(probe.SOURCE) + "\nvoid* probe_instances[] = {"
                   + ", ".join(f"(void*)&{n}" for n in NAMES) + "};\n")
    cubin = tmp / "probe.cubin"
    proc = subprocess.run([nvcc, "-cubin", f"-arch={arch}", *loader.NVRTC_OPTIONS, "--resource-usage",
                           "-o", str(cubin), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tool = resources.nvdisasm_path()
    sass = subprocess.run([tool, "-c", str(cubin)], capture_output=True, text=True, check=True,
                          timeout=120).stdout if tool else None
    return arch, proc.stdout + proc.stderr, sass


@needs_nvcc
def test_every_kernel_compiles_without_spills(compiled):
    _, report, _ = compiled
    frames = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", report)
    assert len(frames) == len(NAMES) and all(f == ("0", "0", "0") for f in frames), report


def _loops(sass: str, kernel: str, chains: int) -> list[list[str]]:
    """The loops (label .. backward branch) of one kernel's SASS, as lists of instructions."""
    sections = re.split(r"^//-+ \.text\.(\S+) -+$", sass, flags=re.M)
    mine = [body for name, body in zip(sections[1::2], sections[2::2])
            if re.match(rf"_Z\d+{kernel}ILi{chains}E", name)]
    assert len(mine) == 1, f"{kernel}<{chains}> not found once in the SASS"
    body, labels = [], {}
    for line in mine[0].splitlines():
        if m := re.match(r"^(\.L_x_\d+):", line):
            labels[m.group(1)] = len(body)
        elif m := re.match(r"^\s+/\*[0-9a-f]{4}\*/\s+(.*?)\s*;", line):
            body.append(m.group(1))
    loops = []
    for i, ins in enumerate(body):
        m = re.search(r"\bBRA\s+`?\(?(\.L_x_\d+)", ins)
        if m and labels.get(m.group(1), i) < i:  # backward; a branch to itself is the trap after EXIT
            loops.append(body[labels[m.group(1)]:i + 1])
    return loops


@needs_nvcc
@pytest.mark.parametrize("instr", list(probe.INSTRS))
def test_timed_loop_is_the_measured_instruction_only(compiled, instr):
    arch, _, sass = compiled
    if sass is None:
        pytest.skip("nvdisasm not found (pip install -e \".[nvcc]\" installs nvidia-cuda-nvdisasm)")
    spec = probe.INSTRS[instr]
    for chains in probe.CHAINS:
        loops = _loops(sass, spec.kernel, chains)
        assert len(loops) == 1, f"{arch} {spec.kernel}<{chains}>: {len(loops)} loops"
        ops = []
        for ins in loops[0]:
            never = re.match(r"@!U?PT\s", ins)  # predicated on "never": a padding no-op
            ops.append("NOP" if never else re.sub(r"^@!?U?P\w+\s+", "", ins).split()[0])
        assert ops.count(SASS_OP[instr]) == spec.body, f"{arch} {spec.kernel}<{chains}>: {ops}"
        other = [o for o in ops if o != SASS_OP[instr]]
        assert all(o.startswith(OVERHEAD) for o in other), f"{arch} {spec.kernel}<{chains}>: {other}"
        assert len([o for o in other if o != "NOP"]) <= 4, f"{arch} {spec.kernel}<{chains}>: {other}"


def test_source_compiles_under_nvrtc():
    """What CuPy does at run time: NVRTC on the loader's text with the runner's name expressions."""
    from test_cuda_compile import _find_nvrtc
    lib = _find_nvrtc()
    if lib is None:
        pytest.skip("libnvrtc not found (set NVRTC_LIBRARY, or install nvidia-cuda-nvrtc)")
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), loader.source(probe.SOURCE).encode(), b"mma_peak.cu",
                                  0, None, None) == 0
    for n in NAMES:
        assert lib.nvrtcAddNameExpression(prog, n.encode()) == 0
    opts = [o.encode() for o in loader.NVRTC_OPTIONS] + [b"-arch=compute_80"]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    assert rc == 0, log.value.decode()
    for n in NAMES:
        assert lib.nvrtcGetLoweredName(prog, n.encode(), ctypes.byref(ctypes.c_char_p())) == 0, n
    lib.nvrtcDestroyProgram(ctypes.byref(prog))


def test_loop_bodies_match_the_source():
    text = open(os.path.join(REPO, "cuda_kernels", probe.SOURCE), encoding="utf-8").read()
    for name, key in (("mma", "MMA_BODY"), ("ffma", "FFMA_BODY")):
        assert int(re.search(rf"constexpr int {key} = (\d+);", text).group(1)) == probe.INSTRS[name].body


def test_closed_form_matches_the_kernels_fragment_slots():
    """The .cu's per-lane operand values, placed by the PTX fragment layout of m16n8k8 TF32,
    multiply to what the host expects in each lane's four accumulators."""
    a, b = np.full((16, 8), np.nan), np.full((8, 8), np.nan)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        a[g, t], a[g + 8, t] = (1.0, 2.0) if g == t else (0.0, 0.0)            # a0, a1
        a[g, t + 4], a[g + 8, t + 4] = (1.0, 2.0) if g == t + 4 else (0.0, 0.0)  # a2, a3
        b[t, g], b[t + 4, g] = 2.0 ** ((t + g) % 3 - 2), 2.0 ** ((t + 4 + g) % 3 - 2)  # b0, b1
    d = a @ b
    assert np.array_equal(d, probe.mma_product())
    got = probe.step_values("mma")[:32]
    lanes = np.arange(32)
    g, t = lanes // 4, lanes % 4
    assert np.array_equal(got, np.stack([d[g, 2 * t], d[g, 2 * t + 1], d[g + 8, 2 * t], d[g + 8, 2 * t + 1]], 1))


@pytest.mark.parametrize("instr", list(probe.INSTRS))
def test_every_partial_sum_stays_exact_in_fp32(instr):
    """Chain c starts at c (<= 7) and adds d per step, MAX_STEPS at most: exact while the sum
    needs at most 24 bits above its smallest part (d, or 1 for the start)."""
    d = np.unique(probe.step_values(instr))
    assert np.array_equal(np.exp2(np.round(np.log2(d))), d) and d.min() >= 0.25 and d.max() <= 2
    assert all((7 + probe.MAX_STEPS * v) / min(v, 1.0) < 2 ** 24 for v in d)
    # The thread's fp32 sum over its chains, in the kernel's order, is within the check's tolerance.
    vals = probe.step_values(instr)
    for chains in probe.CHAINS:
        acc = [(c + probe.MAX_STEPS * vals).astype(np.float32) for c in range(chains)]
        assert all(np.array_equal(a, c + probe.MAX_STEPS * vals) for c, a in enumerate(acc))  # exact, as above
        total = np.zeros(probe.THREADS, np.float32)
        for a in acc:
            total += (a[:, 0] + a[:, 1]) + (a[:, 2] + a[:, 3]) if a.shape[1] == 4 else a[:, 0]
        assert probe.check(total, probe.expected_sums(instr, chains, probe.MAX_STEPS)) is None


def test_check_passes_only_the_closed_form():
    want = probe.expected_sums("mma", 2, 1000)
    good = np.tile(want, 3).astype(np.float32)
    assert probe.check(good, want) is None
    assert "384 of 384" in probe.check(good * 0.5, want)
    one = good.copy()
    one[130] += 1
    assert probe.check(one, want).startswith("1 of 384 thread sums wrong; block 1 thread 2")
    nan = good.copy()
    nan[5] = np.nan
    assert probe.check(nan, want).startswith("1 of 384")
    assert "sums for blocks of 128" in probe.check(good[:-1], want)


@pytest.mark.parametrize("argv, message", [
    (["--warps", "6"], "--warps '6': 6 not allowed"),
    (["--warps", "64"], "64 not allowed"),
    (["--warps", "4,x"], "comma-separated integers"),
    (["--chains", "3"], "--chains '3': 3 not allowed"),
    (["--instr", "hmma"], "--instr 'hmma'"),
    (["--target-ms", "0"], "between 1 and 200"),
    (["--reps", "0"], "between 1 and 50"),
    (["--out", "/nonexistent-folder/x.json"], "cannot be written"),
    (["--out", "."], "is a folder"),
])
def test_bad_arguments_exit_2_before_any_gpu_work(monkeypatch, capsys, argv, message):
    def no_gpu():
        raise AssertionError("reached the GPU")
    monkeypatch.setattr(probe, "_device", no_gpu)
    assert probe.main(argv) == 2
    err = capsys.readouterr()
    assert err.err.startswith("error: ") and message in err.err and err.out == ""


def test_command_line_exit_status_without_a_gpu():
    proc = subprocess.run([sys.executable, "-m", "cuda_kernels.probes.mma_peak", "--chains", "5"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --chains") and proc.stdout == ""


# ------------------------------------------------------------------------ a stand-in device

class _FakeDevice:
    """What run() uses of CuPy. A launch writes each thread's closed-form sum (times ``wrong``
    for the chain counts in ``bad``) and takes 1 us per loop iteration of fake GPU time."""

    def __init__(self, bad=()):
        self.now, self.bad = 0.0, bad
        dev = self

        class Event:
            def record(self):
                self.t = dev.now

            def synchronize(self):
                pass

        def module(code, options, name_expressions):
            assert "mma_tf32_peak" in code and list(options) == list(loader.NVRTC_OPTIONS)
            return types.SimpleNamespace(get_function=lambda name: dev.function(name))
        self.float32, self.asnumpy, self.RawModule = np.float32, np.asarray, module
        self.empty = lambda n, dtype: np.empty(n, dtype)
        self.cuda = types.SimpleNamespace(
            Event=Event, get_elapsed_time=lambda a, b: b.t - a.t,
            Device=lambda: types.SimpleNamespace(compute_capability="90", attributes={
                "MultiProcessorCount": 2, "MaxSharedMemoryPerMultiprocessor": 228 * 1024,
                "MaxSharedMemoryPerBlockOptin": 227 * 1024}),
            driver=types.SimpleNamespace(occupancyMaxActiveBlocksPerMultiprocessor=lambda ptr, threads, smem:
                                         min(16, 228 * 1024 // (smem + 1024))))

    def function(self, name):
        kernel, chains = re.fullmatch(r"(\w+)<(\d)>", name).groups()
        instr = next(i for i, s in probe.INSTRS.items() if s.kernel == kernel)

        def launch(grid, block, args):
            iters, out = int(args[0]), args[1]
            sums = probe.expected_sums(instr, int(chains), iters * probe.INSTRS[instr].body // int(chains))
            out[:] = np.tile(sums, grid[0]) * (0.5 if int(chains) in self.bad else 1.0)
            self.now += iters * 1e-3
        return _Fn(launch)


class _Fn:
    num_regs, local_size_bytes, ptr = 40, 0, 0

    def __init__(self, launch):
        self.launch = launch

    def __call__(self, grid, block, args, shared_mem=0):
        assert shared_mem <= getattr(self, "max_dynamic_shared_size_bytes", 48 * 1024)
        self.launch(grid, block, args)


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(gpuinfo, "clock_sample", lambda: gpuinfo.ClockSample(sm_mhz=1000, temp_c=50, throttle=[]))
    env = types.SimpleNamespace(as_dict=lambda: {"gpu": "stand-in", "sm_count": 2, "compute_capability": "9.0",
                                             "fp32_peak_tflops": 0.512})
    monkeypatch.setattr(gpuinfo, "environment", lambda: env)

    def use(bad=()):
        dev = _FakeDevice(bad)
        monkeypatch.setattr(probe, "_device", lambda: dev)
        return dev
    return use


def test_sweep_on_a_stand_in_device_writes_rates_and_json(stand_in, tmp_path, capsys):
    stand_in()
    out = tmp_path / "peak.json"
    out.write_text("old")
    assert probe.main(["--warps", "4,8", "--target-ms", "10", "--reps", "3", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert os.listdir(tmp_path) == ["peak.json"]  # replaced, no temporary file left
    assert len(doc["rows"]) == 2 * 2 * len(probe.CHAINS) and all(r["status"] == "ok" for r in doc["rows"])
    for r in doc["rows"]:
        spec = probe.INSTRS[r["instr"]]
        per_block = probe.WARPS_PER_BLOCK if spec.per == "warp" else probe.THREADS
        # 1 us of fake time per iteration: flops per us, whatever the loop count chosen
        assert r["tflops"] == pytest.approx(r["blocks"] * per_block * spec.body * spec.flops * 1e-6, rel=2e-2)
        assert r["blocks"] == 2 * r["warps_per_sm"] // 4 and len(r["times_ms"]) == 3
        assert r["median_ms"] == pytest.approx(10, rel=0.05) and r["steps_per_chain"] <= probe.MAX_STEPS
        assert r["flops_per_clk_per_sm"] == pytest.approx(r["tflops"] * 1e12 / (2 * 1000e6), rel=1e-2)
    assert doc["best"]["mma"]["warps_per_sm"] == 8 and doc["best"]["ffma"]["tflops"] > 0
    ffma = doc["best"]["ffma"]
    assert ffma["pct_of_fp32_peak_at_max_clock"] == pytest.approx(100 * ffma["tflops"] / 0.512, abs=0.1)
    assert ffma["pct_of_fp32_peak_at_sampled_clock"] == pytest.approx(ffma["flops_per_clk_per_sm"] / 2.56, abs=0.1)
    # shared memory leaves room for exactly the row's blocks per SM
    assert all(r["resident_blocks_per_sm"] == r["warps_per_sm"] // 4 and r["all_resident"] for r in doc["rows"])
    assert doc["environment"]["gpu"] == "stand-in"
    assert doc["command"].endswith("--out " + str(out))
    table = capsys.readouterr().out
    assert "best mma:" in table and "best ffma:" in table


def test_a_wrong_sum_is_failed_with_no_number(stand_in, tmp_path):
    stand_in(bad=(2,))
    out = tmp_path / "peak.json"
    assert probe.main(["--instr", "mma", "--warps", "4", "--chains", "1,2", "--out", str(out)]) == 1
    rows = {r["chains"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows[1]["status"] == "ok" and rows[1]["tflops"] > 0
    assert rows[2]["status"].startswith("FAILED: ") and rows[2]["tflops"] is None


# ----------------------------------------------------------------------------------- on a GPU

@pytest.mark.gpu
def test_smallest_sweep_on_the_gpu(tmp_path):
    pytest.importorskip("cupy", reason="CuPy is not installed (pip install -e .[cuda13] or .[cuda12])")
    out = tmp_path / "peak.json"
    rc = probe.main(["--warps", "4", "--chains", "1", "--target-ms", "2", "--reps", "2", "--out", str(out)])
    doc = json.loads(out.read_text())
    assert rc == 0, [r["status"] for r in doc["rows"]]
    assert [(r["instr"], r["status"]) for r in doc["rows"]] == [("mma", "ok"), ("ffma", "ok")]
    assert all(r["tflops"] > 0 for r in doc["rows"]) and doc["environment"]["sm_count"] > 0
