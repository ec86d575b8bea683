"""The CUDA stages on a machine without a GPU: every declared kernel configuration compiles with
nvcc for sm_80 and sm_90 without local-memory spills and within the per-SM limits; the
registration, the sources' headers and the shape rules are what the ladder promises."""
import ctypes
import ctypes.util
import glob
import os
import re
import subprocess
import sys

import pytest

import cuda_kernels
from compare.harness.problem import Problem
from compare.harness.registry import STAGES, _REGISTRY
from cuda_kernels import loader, registry, resources

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_NVCC = resources.nvcc_path() is not None
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not found (no CUDA toolkit on this machine)")

ARCH_LIMITS = {"sm_80": 163 * 1024, "sm_90": 227 * 1024}  # max shared memory per block
# Stages declared for one arch (StageSpec.arch: stage 13's sm_90a) are compiled for it alone.
OWN_ARCHS = {s.arch: 227 * 1024 for s in registry.SPECS if s.arch}
ALL_ARCHS = {**ARCH_LIMITS, **OWN_ARCHS}


def _configs_for(arch):
    return [(s, c) for s, c in registry.all_configs() if (s.arch == arch if arch in OWN_ARCHS else not s.arch)]


@pytest.fixture(scope="session")
def compiled_by_arch():
    """Every configuration compiled ONCE per test session (one nvcc run per configuration with a
    -gencode per arch, in parallel): {arch: rows}; sm_80 and sm_90 asked for, an arch-specific
    stage's own arch added by the resources module."""
    if not HAVE_NVCC:
        pytest.skip("nvcc not found (no CUDA toolkit on this machine)")
    return resources.resource_rows_by_arch(list(ARCH_LIMITS))


@pytest.fixture(params=list(ALL_ARCHS))
def compiled(request, compiled_by_arch):
    return request.param, compiled_by_arch[request.param]


@needs_nvcc
def test_every_configuration_compiles(compiled):
    arch, rows = compiled
    want = _configs_for(arch)
    assert len(rows) == len(want) and want
    assert [(r["kernel"], r["config"]) for r in rows] == [(s.name, c.label) for s, c in want]
    assert all(r["arch"] == arch for r in rows)
    bad = [f"{r['kernel']} {r['config']}:\n{r['log']}" for r in rows if not r["ok"]]
    assert not bad, f"nvcc -arch={arch} failed:\n" + "\n".join(bad)


@needs_nvcc
def test_no_spills_and_within_limits(compiled):
    arch, rows = compiled
    for r in rows:
        what = f"{r['kernel']} {r['config']} on {arch}"
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, f"{what} spills: {r}"
        assert r["stack"] == 0, f"{what} uses a {r['stack']}-byte stack frame (local memory)"
        assert r["registers"] <= 255, what
        assert r["registers"] * r["threads"] <= 65536, f"{what}: {r['registers']} regs x {r['threads']} threads"
        smem = r["smem_static"] + r["smem_dynamic"]
        assert smem <= ALL_ARCHS[arch], f"{what}: {smem} bytes of shared memory"
        assert r["blocks_per_sm"] >= 1, what


@needs_nvcc
def test_tiled_stages_keep_two_blocks_per_sm(compiled):
    """Stages 08-10 are designed for 2 resident blocks (16 warps) per SM: <= 128 registers.
    Exception: stage 09's 128x256 variants (8x16 per thread) are designed for 1 block per SM."""
    arch, rows = compiled
    for r in rows:
        if r["kernel"].startswith(("cuda.08", "cuda.09", "cuda.10")) and r["threads"] == 256 \
                and "reduce" not in r["config"] and r["config"] != "scale_c":
            want = 1 if r["config"].startswith("128x256") else 2
            assert r["blocks_per_sm"] >= want, f"{r['kernel']} {r['config']} on {arch}: {r}"


@needs_nvcc
def test_one_nvcc_run_reports_each_arch_separately(compiled_by_arch):
    """The two archs come from one fatbin compile: their ptxas sections must not be mixed up.
    sm_90 allows more shared memory per SM than sm_80, so a block that is shared-memory bound
    on sm_80 fits at least as many times on sm_90; and the entry functions are the same."""
    rows80, rows90 = compiled_by_arch["sm_80"], compiled_by_arch["sm_90"]
    for a, b in zip(rows80, rows90):
        assert a["entry"] == b["entry"] and a["config"] == b["config"]
        assert a["smem_static"] == b["smem_static"]
    assert any(a["registers"] != b["registers"] for a, b in zip(rows80, rows90)), \
        "identical register counts on sm_80 and sm_90 for every configuration: the report parser " \
        "is probably reading one arch's section twice"


def test_resources_table_lists_every_configuration(compiled_by_arch):
    """The full table, from the session's compile (the CLI test below compiles one stage only)."""
    assert set(compiled_by_arch) == set(ALL_ARCHS)
    for arch, rows in compiled_by_arch.items():
        table = resources.format_table(rows)
        for spec, cfg in _configs_for(arch):
            assert cfg.label in table and spec.name in table


@needs_nvcc
def test_wgmma_stage_compiles_for_sm90a_only_with_setmaxnreg_honoured(compiled_by_arch):
    """Stage 13 is declared for sm_90a (StageSpec.arch): compiled there, through -gencode (the
    -arch shorthand of nvcc 13.0 also runs a plain sm_90 pass that rejects wgmma), never for
    sm_80 / sm_90; its GEMM keeps 1 block of 384 threads per SM, its 168-register cap at entry
    (what setmaxnreg needs: __launch_bounds__(384, 1)), no warning C7508 (setmaxnreg ignored)."""
    spec = next(s for s in registry.SPECS if s.stage == "wgmma_tma")
    assert spec.arch == "sm_90a"
    assert all(r["kernel"] != spec.name for a in ARCH_LIMITS for r in compiled_by_arch[a])
    rows = [r for r in compiled_by_arch["sm_90a"] if r["kernel"] == spec.name]
    assert len(rows) == len(spec.configs) and all(r["ok"] for r in rows)
    gemm = [r for r in rows if r["threads"] == registry.WGMMA_THREADS]
    assert len(gemm) == len(registry.WGMMA_TILES) + 1  # + the tf32 kernel that reads B as stored
    for r in gemm:
        assert r["blocks_per_sm"] == 1 and r["registers"] <= 168 and r["smem_dynamic"] > 160 * 1024, r
    cmd = resources._nvcc_command("nvcc", ["sm_90a"], "x.cu", "x")
    assert "-gencode" in cmd and "arch=compute_90a,code=sm_90a" in cmd and not any(c.startswith("-arch") for c in cmd)


@needs_nvcc
@pytest.mark.parametrize("label", [c.label for s in registry.SPECS if s.arch for c in s.configs
                                   if c.threads == registry.WGMMA_THREADS])
def test_wgmma_kernels_compile_without_serialization_or_ignored_setmaxnreg(tmp_path, label):
    """ptxas warns where the design silently fails: C7508 (setmaxnreg ignored: no register cap at
    entry, or roles not one if/else) and C7513 (every wgmma serialized: registers that feed a wgmma
    written while an earlier one is in flight, which the B-from-registers kernel avoids by loading
    its fragments after wait_group 0)."""
    spec = next(s for s in registry.SPECS if s.stage == "wgmma_tma")
    cfg = spec.config(label)
    src = tmp_path / "k.cu"
    src.write_text(resources.instantiation_source(spec, cfg))
    cmd = resources._nvcc_command(resources.nvcc_path(), ["sm_90a"], str(src), str(tmp_path / "k"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "C7508" not in out and "C7513" not in out and "serialized" not in out, out


class _FakeDevice:
    """A backend that reports a compute capability (the CPU has none)."""

    def __init__(self, cc):
        self.cc = cc

    def compute_capability(self):
        return self.cc


@pytest.mark.parametrize("cc, ok", [((8, 0), False), ((8, 9), False), ((9, 0), True), ((10, 0), False), (None, False)])
def test_wgmma_stage_says_why_it_cannot_run_off_sm90(cc, ok):
    """Stage 13 runs on compute capability 9.0 only (sm_90a code: wgmma, setmaxnreg); elsewhere
    why_not names the requirement and the GPU it found, before anything is compiled; on any
    shape its precisions are otherwise free."""
    k = _REGISTRY["cuda.13_wgmma_tma"]
    with loader.use_backend(_FakeDevice(cc)):
        for M, N, K in [(1, 1, 1), (7, 33, 127), (4097, 1, 1023)]:
            for pr in ("tf32", "tf32x3"):
                why = k.why_not(Problem(M, N, K, precision=pr))
                if ok:
                    assert why is None
                else:
                    assert "compute capability 9.0" in why and "sm_90a" in why, why
                    assert ("no CUDA device" in why) if cc is None else (f"sm_{cc[0]}{cc[1]}" in why and "no wgmma" in why)
        assert "no fp32 path" in k.why_not(Problem(8, 8, 8))
        if not ok:
            from compare.harness.errors import UsageError
            p = Problem(64, 64, 64, precision="tf32")
            with pytest.raises(UsageError, match="compute capability 9.0"):
                k.prepare(p, None, {})


class _Buf:
    _next = [1 << 20]

    def __init__(self, n, align=256):
        self.n = n
        self.addr = self._next[0]
        self._next[0] += -(-(4 * n + 1) // align) * align


class _Sm90Recorder(_FakeDevice):
    """The device side of stage 13's prepare on the CPU: buffers with addresses, functions that
    record their launches, tensor maps recorded instead of encoded."""

    def __init__(self):
        super().__init__((9, 0))
        self.launches = []

    def empty(self, n):
        return _Buf(n)

    @staticmethod
    def address(b):
        return b.addr

    def function(self, filename, cfg, expressions, arch=""):
        assert filename == "13_wgmma_tma.cu" and arch == "sm_90a" and cfg.expr in expressions
        return lambda grid, block, args, **kw: self.launches.append((cfg.label, grid, block, args, kw))

    def stream(self):
        return None


class _Inputs:
    def __init__(self, p):
        self.bufs = {"A": _Buf(p.M * p.K), "B": _Buf(p.K * p.N), "C": _Buf(p.M * p.N)}

    def cupy(self, name):
        return self.bufs[name]


@pytest.mark.parametrize("shape, precision, b_operand, want", [
    ((256, 256, 256), "tf32", None, (["256x128x32s4.regb"], "registers", False)),
    ((300, 260, 4096), "tf32", "copy", (["prepare.transpose", "128x256x32s4"], "copy", False)),
    ((256, 255, 256), "tf32", None, (["prepare.transpose", "128x256x32s4"], "copy", False)),
    ((256, 256, 255), "tf32", None, (["prepare.copy", "256x128x32s4.regb"], "registers", True)),
    ((1000, 1003, 997), "tf32x3", None,
     (["prepare.transpose.split", "prepare.copy.split", "128x128x32s3.x3"], "copy", True)),
])
def test_wgmma_prepare_chooses_the_operand_paths(monkeypatch, shape, precision, b_operand, want):
    """Stage 13's prepare on a recording device: which copies run before the GEMM, in order, the
    GEMM's grid, and the tensor maps' geometry (rows, columns, row stride in floats, box rows)
    for the path it picked: B read as stored (tf32, N % 4 == 0), else copied K-major with rows
    padded to a multiple of 4 floats; A copied where K % 4 != 0 or for the split."""
    from cuda_kernels import tma
    maps = []

    def fake_map(address, rows, cols, ld, box_rows):
        tma.check_geometry(rows, cols, ld, box_rows)
        maps.append((address, rows, cols, ld, box_rows))
        return len(maps)
    monkeypatch.setattr(tma, "tensor_map", fake_map)
    labels, b_path, a_copied = want
    p = Problem(*shape, precision=precision, alpha=0.5, beta=2.0)
    dev, inputs = _Sm90Recorder(), _Inputs(p)
    k = _REGISTRY["cuda.13_wgmma_tma"]
    with loader.use_backend(dev):
        launch = k.prepare(p, inputs, {"b_operand": b_operand} if b_operand else {})
        launch()
    assert [l[0] for l in dev.launches] == labels
    M, N, K = shape
    kp = -(-K // 4) * 4
    gemm = dev.launches[-1]
    cfg = registry.SPECS[[s.stage for s in registry.SPECS].index("wgmma_tma")].config(labels[-1])
    bm, bn = cfg.tile
    assert gemm[1] == ((-(-M // bm)) * (-(-N // bn)), 1, 1) and gemm[2] == (384, 1, 1)
    assert gemm[4]["shared_mem"] == cfg.smem_dynamic > 160 * 1024
    assert gemm[3][-6:-1] == (M, N, K, 0.5, 2.0) and gemm[3][-1] is inputs.bufs["C"]
    a_map = maps[0]
    assert a_map[1:3] == (M, K) and a_map[3] == (kp if a_copied else K)
    assert (a_map[0] == inputs.bufs["A"].addr) == (not a_copied)
    if b_path == "registers":
        assert maps[1] == (inputs.bufs["B"].addr, K, N, N, 32) and a_map[4] == 256 and len(maps) == 2
    else:
        assert maps[1][1:] == (N, K, kp, bn) and maps[1][0] != inputs.bufs["B"].addr and len(maps) == 4
        t = dev.launches[0]
        assert t[0].startswith("prepare.transpose") and t[1] == (-(-N // 32), -(-K // 32), 1)
        assert t[3][0] is inputs.bufs["B"] and t[3][1:3] == (K, N) and t[3][-1] == kp
    assert launch.config["b_operand"].startswith("B copied" if b_path == "copy" else "B read by TMA as stored")
    assert launch.config["a_operand"].startswith("copied") == a_copied
