"""The peaks probe (cuda_kernels/probes/peaks.py): the FFMA, TF32 tensor-core and DRAM-copy ceilings
every row's % SOL is taken against. Without a GPU: the wgmma kernel compiles for sm_90a without
spills and its timed loop is HGMMA.64x256x8.F32.TF32 only (SASS through nvdisasm), WGMMA_BODY of
them, plus the warpgroup fences, counter, compare and branch; the copy kernel moves 128-bit vectors
(LDG.E.128 / STG.E.128); the wgmma check passes only the closed form; the cache is keyed by GPU
UUID and driver (a second run measures nothing; another driver measures again); bad arguments exit
2. The FFMA and mma.sync loops are tests/test_probe_mma_peak.py's. On a GPU (marker ``gpu``): each
peak lies within plausible bounds of the datasheet at the clock it ran at, and cuBLAS at 4096^3
never beats the probe's peak."""
from __future__ import annotations

import json
import os
import re
import subprocess
import types

import numpy as np
import pytest

from compare.harness import gpuinfo
from cuda_kernels import loader, resources
from cuda_kernels.probes import peaks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_nvcc = pytest.mark.skipif(resources.nvcc_path() is None, reason="nvcc not found (no CUDA toolkit here)")


def _compile(tmp_path, source: str, arch: str):
    nvcc = resources.nvcc_path()
    src = tmp_path / os.path.basename(source)
    src.write_text(loader.source(source))
    cubin = tmp_path / (src.stem + ".cubin")
    proc = subprocess.run([nvcc, "-cubin", f"-arch={arch}", *loader.NVRTC_OPTIONS, "--resource-usage",
                           "-o", str(cubin), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tool = resources.nvdisasm_path()
    assert tool, "nvdisasm not found (pip install -e \".[nvcc]\" installs nvidia-cuda-nvdisasm)"
    sass = subprocess.run([tool, "-c", str(cubin)], capture_output=True, text=True, check=True, timeout=120).stdout
    return proc.stdout + proc.stderr, sass


def _loops(sass: str) -> list[list[str]]:
    """The backward-branch loops of a one-kernel SASS listing, as lists of opcodes."""
    body, labels = [], {}
    for line in sass.splitlines():
        if m := re.match(r"^(\.L_x_\d+):", line):
            labels[m.group(1)] = len(body)
        elif m := re.match(r"^\s+/\*[0-9a-f]{4}\*/\s+(.*?)\s*;", line):
            body.append(m.group(1))
    loops = []
    for i, ins in enumerate(body):
        m = re.search(r"\bBRA\s+`?\(?(\.L_x_\d+)", ins)
        if m and labels.get(m.group(1), i) < i:
            loops.append([re.sub(r"^@!?U?P\w+\s+", "", x).split()[0] for x in body[labels[m.group(1)]:i + 1]])
    return loops


@needs_nvcc
def test_wgmma_loop_is_hgmma_tf32_only(tmp_path):
    report, sass = _compile(tmp_path, peaks.WGMMA_SOURCE, "sm_90a")
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    regs = int(re.search(r"Used (\d+) registers", report).group(1))
    # three warpgroups of 128 threads must fit the SM's 64K registers (WGMMA_WARPGROUPS)
    assert max(peaks.WGMMA_WARPGROUPS) * 128 * ((regs + 7) // 8 * 8) <= 65536, regs
    loops = [lp for lp in _loops(sass) if any(o.startswith("HGMMA") for o in lp)]
    assert len(loops) == 1, loops
    ops = loops[0]
    assert ops.count("HGMMA.64x256x8.F32.TF32") == peaks.WGMMA_BODY, ops
    other = [o for o in ops if o != "HGMMA.64x256x8.F32.TF32"]
    allowed = ("WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR.LE", "IADD3", "ISETP", "BRA", "NOP", "MOV", "R2UR", "U")
    assert all(o.startswith(allowed) for o in other), other
    # ptxas rebuilds the descriptors in uniform registers each trip (about 29 ops): under 2 issue
    # slots per wgmma, which keeps the tensor pipe busy 128 cycles an SM
    assert len(other) <= 2 * peaks.WGMMA_BODY, other


@needs_nvcc
@pytest.mark.parametrize("source, arch, name", [(peaks.WGMMA_SOURCE, "sm_90a", "wgmma_tf32_peak"),
                                                (peaks.COPY_SOURCE, "sm_80", "dram_copy")])
def test_kernels_keep_the_names_peaks_py_asks_cupy_for(tmp_path, source, arch, name):
    """peaks.py gets them by plain name (no name expressions): the symbols must be unmangled."""
    _, sass = _compile(tmp_path, source, arch)
    assert re.search(rf"^\s*\.text\.{name}:", sass, flags=re.M) or f".text.{name}" in sass, sass[:2000]
    assert f"get_function(\"{name}\")" in open(peaks.__file__, encoding="utf-8").read()


def test_wgmma_body_and_sizes_match_the_source():
    text = open(os.path.join(REPO, "cuda_kernels", peaks.WGMMA_SOURCE), encoding="utf-8").read()
    assert int(re.search(r"constexpr int WGMMA_BODY = (\d+);", text).group(1)) == peaks.WGMMA_BODY
    assert "m64n256k8.f32.tf32.tf32" in text
    # one m64n256k8: 64 x 256 x 8 multiply-adds, 2 flops each
    assert peaks.WGMMA_FLOPS == 262144
    # A 64 rows and B 256 rows of 128 bytes, plus 1 KiB to align them
    assert peaks.WGMMA_SMEM == 8192 + 32768 + 1024
    assert 128 * peaks.WGMMA_MAX_STEPS <= 2 ** 24


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_copy_kernel_moves_128_bit_vectors(tmp_path, arch):
    report, sass = _compile(tmp_path, peaks.COPY_SOURCE, arch)
    assert "0 bytes spill stores" in report, report
    loops = _loops(sass)
    main = max(loops, key=len)
    assert sum(o.startswith("LDG.E.128") for o in main) == 4, main
    assert sum(o.startswith("STG.E.128") for o in main) == 4, main
    assert not any(o.startswith(("LDG.E ", "STG.E ")) or o in ("LDG.E", "STG.E") for o in main), main


@pytest.mark.parametrize("source, arch", [(peaks.WGMMA_SOURCE, "sm_90a"), (peaks.COPY_SOURCE, "compute_80")])
def test_sources_compile_under_nvrtc(source, arch):
    """What CuPy does at run time: NVRTC on the loader's text with the options peaks.py passes."""
    import ctypes
    from test_cuda_compile import _find_nvrtc
    lib = _find_nvrtc()
    assert lib is not None, "libnvrtc not found (set NVRTC_LIBRARY, or install nvidia-cuda-nvrtc)"
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), loader.source(source).encode(), b"probe.cu", 0, None, None) == 0
    opts = [o.encode() for o in loader.NVRTC_OPTIONS] + [f"-arch={arch}".encode()]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    assert rc == 0, log.value.decode()


def test_wgmma_check_passes_only_the_closed_form():
    steps = 1000
    good = np.full(384, 128.0 * steps, np.float32)
    assert peaks.wgmma_check(good, steps) is None
    one = good.copy()
    one[7] -= 1
    assert peaks.wgmma_check(one, steps).startswith("1 of 384 thread sums wrong; thread 7")
    assert peaks.wgmma_check(good, steps + 1).startswith("384 of 384")
    nan = good.copy()
    nan[0] = np.nan
    assert peaks.wgmma_check(nan, steps) is not None


def test_noise_is_spread_over_median():
    assert peaks.noise([1.0, 1.1, 0.9]) == pytest.approx(0.2)
    assert peaks.noise([2.0, 2.0, 2.0]) == 0.0


def test_datasheet_table():
    assert gpuinfo.datasheet("NVIDIA H100 80GB HBM3") == dict(name="H100 SXM", fp32_tflops=66.9, tf32_tflops=494.7,
                                                             dram_gbps=3350.0)
    assert gpuinfo.datasheet("NVIDIA H200")["dram_gbps"] == 4800.0
    assert gpuinfo.datasheet("NVIDIA H200")["tf32_tflops"] == 494.7
    assert gpuinfo.datasheet("NVIDIA A100-SXM4-80GB")["fp32_tflops"] == 19.5
    assert gpuinfo.datasheet("NVIDIA A100-SXM4-80GB")["dram_gbps"] == 2039.0
    assert gpuinfo.datasheet("NVIDIA H100 PCIe")["name"] == "H100 PCIe"
    assert gpuinfo.datasheet("Tesla T4") is None


# ------------------------------------------------------------------------------------------ cache

@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """ensure() on a stand-in GPU whose identity the test sets; counts the measurements."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    state = {"uuid": "GPU-1111", "driver": "580.1", "runs": 0, "fail": False, "freed": 0}
    pool = types.SimpleNamespace(free_all_blocks=lambda: state.__setitem__("freed", state["freed"] + 1))
    monkeypatch.setattr(peaks, "_device", lambda: types.SimpleNamespace(get_default_memory_pool=lambda: pool))
    monkeypatch.setattr(peaks, "_identity", lambda cupy: {"gpu": "NVIDIA H100 80GB HBM3", "uuid": state["uuid"],
                                                          "driver": state["driver"]})

    def run(args, cupy, say=lambda s: None):
        state["runs"] += 1
        doc = {"uuid": state["uuid"], "driver": state["driver"], "gpu": "NVIDIA H100 80GB HBM3", "rows": [],
               "fp32": {"tflops": 50.0 + state["runs"], "sm_mhz": 1980, "noise": 0.01},
               "tf32": {"tflops": 400.0, "sm_mhz": 1980, "noise": 0.01},
               "dram": {"gbps": 3000.0, "noise": 0.01}}
        if state["fail"]:
            doc["tf32"] = None
        return doc
    monkeypatch.setattr(peaks, "run", run)
    return state


def test_cache_is_keyed_by_uuid_and_driver(fake_gpu, tmp_path):
    first = peaks.ensure()
    assert fake_gpu["runs"] == 1 and first["fp32"]["tflops"] == 51.0
    assert fake_gpu["freed"] == 1     # the copy's buffers left for the worker, not kept in this process's pool
    path = tmp_path / "cache" / "gemm-ladder" / "peaks" / "GPU-1111_driver-580.1.json"
    assert json.loads(path.read_text())["fp32"]["tflops"] == 51.0
    assert peaks.ensure()["fp32"]["tflops"] == 51.0 and fake_gpu["runs"] == 1      # cached: nothing measured
    assert gpuinfo.load_peaks("GPU-1111", "580.1")["fp32"]["tflops"] == 51.0
    fake_gpu["driver"] = "580.2"                                                  # a new driver: measured again
    assert peaks.ensure()["fp32"]["tflops"] == 52.0 and fake_gpu["runs"] == 2
    fake_gpu["uuid"] = "GPU-2222"                                                 # another GPU: measured again
    assert peaks.ensure()["fp32"]["tflops"] == 53.0 and fake_gpu["runs"] == 3
    assert sorted(os.listdir(path.parent)) == ["GPU-1111_driver-580.1.json", "GPU-1111_driver-580.2.json",
                                               "GPU-2222_driver-580.2.json"]
    assert peaks.ensure(force=True)["fp32"]["tflops"] == 54.0 and fake_gpu["runs"] == 4
    assert gpuinfo.load_peaks("GPU-2222", "580.1") is None


def test_a_file_of_another_gpu_is_not_taken(fake_gpu, tmp_path):
    peaks.ensure()
    path = gpuinfo.peaks_path("GPU-1111", "580.1")
    doc = json.loads(open(path).read())
    doc["uuid"] = "GPU-9999"                       # copied from another machine under this name
    open(path, "w").write(json.dumps(doc))
    assert gpuinfo.load_peaks("GPU-1111", "580.1") is None
    open(path, "w").write("{not json")
    assert gpuinfo.load_peaks("GPU-1111", "580.1") is None


def test_a_failed_probe_is_not_cached(fake_gpu):
    fake_gpu["fail"] = True
    said = []
    assert peaks.ensure(say=said.append) is None
    assert "tf32" in said[-1] and not os.path.exists(gpuinfo.peaks_path("GPU-1111", "580.1"))


@pytest.mark.parametrize("tf32, why", [
    ({"tflops": 36.3, "instr": "wgmma.mma_async m64n256k8 tf32", "mma_sync_tflops": 323.8}, "below mma.sync's 323.8"),
    ({"tflops": 40.0, "instr": "mma.sync m16n8k8 tf32"}, "below FFMA's 51.0"),
])
def test_an_implausible_tensor_core_peak_is_not_cached(fake_gpu, monkeypatch, tf32, why):
    # The H200 start whose wgmma probe ran 17x slow: 36.3 TFLOP/s beside mma.sync's 323.8.
    run = peaks.run
    monkeypatch.setattr(peaks, "run", lambda *a, **k: {**run(*a, **k), "tf32": {**tf32, "sm_mhz": 1980, "noise": 0.03}})
    said = []
    assert peaks.ensure(say=said.append) is None
    assert why in said[-1] and "no % SOL" in said[-1]
    assert not os.path.exists(gpuinfo.peaks_path("GPU-1111", "580.1"))
    monkeypatch.setattr(peaks, "run", run)        # a plausible run is cached as before
    assert peaks.ensure()["tf32"]["tflops"] == 400.0


@pytest.mark.parametrize("argv, message", [
    (["--reps", "2"], "between 3 and 50"),
    (["--target-ms", "0"], "between 1 and 200"),
    (["--out", "."], "is a folder"),
])
def test_bad_arguments_exit_2_before_any_gpu_work(monkeypatch, capsys, argv, message):
    def no_gpu():
        raise AssertionError("reached the GPU")
    monkeypatch.setattr(peaks, "_device", no_gpu)
    assert peaks.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


# ----------------------------------------------------------------------------------- on a GPU

@pytest.mark.gpu
def test_peaks_are_plausible_and_cublas_stays_below_them():
    pytest.importorskip("cupy", reason="CuPy is not installed (pip install -e .[cuda13] or .[cuda12])")
    doc = peaks.ensure(say=print, force=True)
    assert doc is not None, "a probe failed (see the lines above)"
    sms = doc["sm_count"]
    cc = tuple(int(v) for v in str(doc["compute_capability"]).split("."))
    fp32 = doc["fp32"]
    # FFMA against SMs x lanes x 2 at the clock the probe ran at, computed here
    at_clock = sms * gpuinfo.FP32_LANES_PER_SM[cc] * 2 * fp32["sm_mhz"] * 1e6 / 1e12
    assert 0.8 * at_clock <= fp32["tflops"] <= 1.05 * at_clock, (fp32, at_clock)
    sheet = doc["datasheet"]
    if sheet:
        assert 0.6 * sheet["tf32_tflops"] <= doc["tf32"]["tflops"] <= 1.05 * sheet["tf32_tflops"], doc["tf32"]
        assert 0.6 * sheet["dram_gbps"] <= doc["dram"]["gbps"] <= 1.0 * sheet["dram_gbps"], doc["dram"]
    if cc == (9, 0):
        assert doc["tf32"]["instr"].startswith("wgmma") and doc["tf32"]["tflops"] > doc["tf32"]["mma_sync_tflops"]
    # cuBLAS never beats the probe's peak at the clock it ran at (plus the probe's noise)
    from compare.harness import registry, runner
    from compare.harness.problem import Problem
    k = registry.get("cublas")
    for prec, key in (("fp32", "fp32"), ("tf32", "tf32")):
        r = runner.run_kernel(k, Problem(4096, 4096, 4096, precision=prec))
        assert r.status == "ok", r.status_text
        p = doc[key]
        ceiling = p["tflops"] * (r.sm_clock_mhz or p["sm_mhz"]) / p["sm_mhz"] * (1 + p["noise"] + 0.02)
        assert r.tflops <= ceiling, (prec, r.tflops, ceiling, r.sm_clock_mhz, p)


# ------------------------------------------------------------------------ a stand-in device

class _Array(np.ndarray):
    """A NumPy array with what peaks.py uses of a CuPy one (.data for cudaMemcpy)."""

    @property
    def data(self):
        arr = self

        class Ptr:
            def copy_from_device_async(self, src, nbytes):
                arr.view(np.uint8)[:nbytes] = src.arr.view(np.uint8)[:nbytes]
                dev.now += nbytes / 1e6     # 1 ms per GB copied
        p = Ptr()
        p.arr = self
        return p


dev = None


class _Fake:
    """run()'s CuPy on a stand-in sm_90 GPU of 2 SMs, 1 MiB L2: launches write the closed-form
    sums (or, ``bad``, wrong ones) and advance a fake clock 1 us per loop trip / 1 ms per GB."""

    def __init__(self, bad=()):
        global dev
        dev = self
        self.now, self.bad = 0.0, set(bad)
        self.float32, self.uint32 = np.float32, np.uint32

        class Event:
            def record(self_):
                self_.t = dev.now

            def synchronize(self_):
                pass
        self.cuda = types.SimpleNamespace(
            Event=Event, get_elapsed_time=lambda a, b: b.t - a.t,
            Device=lambda: types.SimpleNamespace(compute_capability="90", attributes={
                "MultiProcessorCount": 2, "MaxSharedMemoryPerMultiprocessor": 228 * 1024,
                "MaxSharedMemoryPerBlockOptin": 227 * 1024}),
            runtime=types.SimpleNamespace(memGetInfo=lambda: (6 << 20, 8 << 20)),
            driver=types.SimpleNamespace(occupancyMaxActiveBlocksPerMultiprocessor=lambda ptr, threads, smem:
                                         min(16, 228 * 1024 // (smem + 1024))))

    def get_default_memory_pool(self):
        return types.SimpleNamespace(free_all_blocks=lambda: None)

    def empty(self, n, dtype):
        return np.empty(n, dtype).view(_Array)

    def empty_like(self, a):
        return np.empty_like(a).view(_Array)

    def arange(self, n, dtype):
        return np.arange(n, dtype=dtype).view(_Array)

    asnumpy = staticmethod(np.asarray)
    array_equal = staticmethod(np.array_equal)

    def RawModule(self, code, options, name_expressions=None):
        from cuda_kernels.probes import mma_peak
        return types.SimpleNamespace(get_function=lambda name: self.function(name, code, options))

    def function(self, name, code, options):
        from cuda_kernels.probes import mma_peak
        if name == "wgmma_tf32_peak":
            assert "-arch=sm_90a" in options and "wgmma.mma_async" in code

            def launch(grid, block, args):
                iters, out = int(args[0]), args[1]
                steps = iters * peaks.WGMMA_BODY
                out[:] = 128.0 * steps * (0.5 if "wgmma" in self.bad else 1.0)
                self.now += iters * 1e-3
            return _Fn(launch)
        if name == "dram_copy":
            def launch(grid, block, args):
                src, dst, n = args
                k = int(n) * 4
                dst.view(np.float32)[:k] = src.view(np.float32)[:k]
                if "copy" in self.bad:
                    dst.view(np.float32)[0] += 1
                self.now += dst.nbytes / 1e6
            return _Fn(launch)
        kernel, chains = name.split("<")
        chains = int(chains.rstrip(">"))
        instr = next(i for i, s in mma_peak.INSTRS.items() if s.kernel == kernel)

        def launch(grid, block, args):
            iters, out = int(args[0]), args[1]
            sums = mma_peak.expected_sums(instr, chains, iters * mma_peak.INSTRS[instr].body // chains)
            out[:] = np.tile(sums, grid[0])
            self.now += iters * 1e-3
        return _Fn(launch)


class _Fn:
    num_regs, local_size_bytes, ptr = 154, 0, 0

    def __init__(self, launch):
        self.launch = launch

    def __call__(self, grid, block, args, shared_mem=0):
        assert shared_mem <= getattr(self, "max_dynamic_shared_size_bytes", 48 * 1024)
        self.launch(grid, block, args)


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(gpuinfo, "clock_sample", lambda: gpuinfo.ClockSample(sm_mhz=1000, temp_c=50, throttle=[]))
    monkeypatch.setattr(peaks, "_identity", lambda cupy: {
        "gpu": "NVIDIA H100 80GB HBM3", "uuid": "GPU-abc", "driver": "580.1", "sm_count": 2,
        "compute_capability": "9.0", "l2_bytes": 1 << 20, "max_sm_clock_mhz": 1980})
    monkeypatch.setattr(peaks, "COPY_MIN_BYTES", 1 << 20)

    def use(bad=()):
        fake = _Fake(bad)
        monkeypatch.setattr(peaks, "_device", lambda: fake)
        return fake
    return use


def test_a_run_on_a_stand_in_gpu_measures_all_three_and_caches(stand_in, tmp_path, capsys):
    stand_in()
    out = tmp_path / "peaks.json"
    assert peaks.main(["--target-ms", "5", "--reps", "3", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    # 2 SMs, fake time 1 us per loop trip: the rates follow from the loop bodies alone
    # FFMA: blocks x 128 threads x 256 FFMA x 2 flops per us; the best config has the most blocks (32 warps/SM: 16 blocks)
    assert doc["fp32"]["tflops"] == pytest.approx(16 * 128 * 256 * 2 * 1e6 / 1e12, rel=0.02)
    assert doc["fp32"]["sm_mhz"] == 1000 and doc["fp32"]["datasheet_tflops"] == 66.9
    # FP32 lanes at the probe's clock: 2 SMs x 128 x 2 x 1 GHz
    assert doc["fp32"]["lanes_at_clock_tflops"] == pytest.approx(2 * 128 * 2 * 1e9 / 1e12)
    # wgmma: 3 warpgroups/SM x 2 SMs x 16 x 262144 flops per us
    assert doc["tf32"]["instr"].startswith("wgmma") and doc["tf32"]["config"] == {"warpgroups_per_sm": 3}
    assert doc["tf32"]["tflops"] == pytest.approx(6 * 16 * 262144 * 1e6 / 1e12, rel=0.02)
    assert doc["tf32"]["mma_sync_tflops"] > 0 and doc["tf32"]["datasheet_tflops"] == 494.7
    # the copy: 8 x L2 = 8 MiB > memGetInfo's 6 MiB free / 3: 2 MiB buffers, moved at 1 ms per GB, read + write
    assert doc["dram"]["buffer_bytes"] == 2 << 20 and doc["dram"]["counts"] == "read + write"
    assert doc["dram"]["gbps"] == pytest.approx(2 * (2 << 20) / ((2 << 20) / 1e6 * 1e-3) / 1e9, rel=0.01)
    assert doc["dram"]["datasheet_gbps"] == 3350.0
    assert json.loads(open(gpuinfo.peaks_path("GPU-abc", "580.1")).read())["tf32"] == doc["tf32"]
    printed = capsys.readouterr().out
    assert "FP32 FFMA" in printed and "TF32 tensor" in printed and "DRAM" in printed


@pytest.mark.parametrize("bad", ["wgmma", "copy"])
def test_a_wrong_result_is_failed_and_nothing_is_cached(stand_in, bad, capsys):
    stand_in(bad=(bad,))
    assert peaks.main(["--target-ms", "2", "--reps", "3"]) == 1
    assert not os.path.exists(gpuinfo.peaks_path("GPU-abc", "580.1"))
    err = capsys.readouterr().err
    assert "FAILED" in err and "peaks not cached" in err


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_read_ceiling_kernel_keeps_four_128_bit_loads_in_flight(tmp_path, arch):
    """reproduce/read_probe.py's kernel (cuda_kernels/probes/dram_read.cu): its main loop is four
    16-byte loads and no store (a read ceiling, not a copy), no spills, and the plain name the
    script asks CuPy for."""
    report, sass = _compile(tmp_path, "probes/dram_read.cu", arch)
    assert "0 bytes spill stores" in report, report
    main = max(_loops(sass), key=len)
    assert sum(o.startswith("LDG.E.128") for o in main) == 4, main
    assert not any(o.startswith("STG") for o in main), main
    assert ".text.dram_read" in sass
    probe = open(os.path.join(REPO, "reproduce", "read_probe.py"), encoding="utf-8").read()
    assert 'get_function("dram_read")' in probe and '"probes/dram_read.cu"' in probe
