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
from cuda_kernels import heuristics
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
    # The copy path's tile per precision + the register-operand path's tiles, each built three times
    # (B read by TMA, B's rows loaded with cp.async, B's K tiles by one bulk copy each), tf32x3's
    # twice over (A split by the copy, or in shared memory: .asplit).
    # Each register-operand build twice again: data-parallel / split-K, and stream-K (.sk).
    assert len(gemm) == len(registry.WGMMA_TILES) + 2 * 3 * (len(registry.REGB_TILES["tf32"])
                                                            + 2 * len(registry.REGB_TILES["tf32x3"]))
    assert sum(".asplit" in r["config"] for r in gemm) == 2 * 3 * len(registry.REGB_TILES["tf32x3"])
    assert sum(r["config"].endswith(".sk") for r in gemm) == 3 * (len(registry.REGB_TILES["tf32"])
                                                                  + 2 * len(registry.REGB_TILES["tf32x3"]))
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
    its fragments into the register set no group in flight reads)."""
    spec = next(s for s in registry.SPECS if s.stage == "wgmma_tma")
    cfg = spec.config(label)
    src = tmp_path / "k.cu"
    src.write_text(resources.instantiation_source(spec, cfg))
    cmd = resources._nvcc_command(resources.nvcc_path(), ["sm_90a"], str(src), str(tmp_path / "k"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "C7508" not in out and "C7513" not in out and "serialized" not in out, out


def _hgmma_groups(sass: str) -> list:
    """The register-operand GEMM's wgmma groups in SASS order: (A-fragment registers of its
    HGMMAs, the WARPGROUP.DEPBAR that follows the group's last HGMMA, or "")."""
    body = next((part for part in re.split(r"\.text\.", sass)
                 if part.startswith("_Z16sgemm_wgmma_regb") and "HGMMA" in part), "")
    groups, cur = [], None
    for line in body.splitlines():
        m = re.search(r"HGMMA\.\S+ R\d+, (R\d+), gdesc", line)
        if m:
            cur = cur or []
            cur.append(m.group(1))
            if "gsb0" in line:
                groups.append([cur, ""])
                cur = None
        elif "WARPGROUP.DEPBAR" in line and groups and not groups[-1][1]:
            groups[-1][1] = re.search(r"DEPBAR\.LE gsb0, (0x\d)", line).group(1)
    return groups


@needs_nvcc
@pytest.mark.parametrize("label", ["256x128x32s4.regb", "64x128x32s8.regb", "128x128x32s6.regb.cpasync",
                                   "128x128x32s4.regb.x3"])
def test_wgmma_tf32_loop_keeps_one_group_in_flight(tmp_path, label):
    """tf32's register-operand loop (not the stream-K build) waits after each K tile's wgmma group
    only until one group is left in flight (WARPGROUP.DEPBAR.LE gsb0, 0x1): the next tile's B^T
    fragments load while the last group runs, into the other of two register sets, so consecutive
    groups read different registers. tf32x3 waits for every group (0x0): it adds its temporary to
    the accumulators after each tile."""
    spec = next(s for s in registry.SPECS if s.stage == "wgmma_tma")
    src = tmp_path / "k.cu"
    src.write_text(resources.instantiation_source(spec, spec.config(label)))
    cmd = resources._nvcc_command(resources.nvcc_path(), ["sm_90a"], str(src), str(tmp_path / "k"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tool = resources.nvdisasm_path()
    if tool is None:
        pytest.skip("nvdisasm not found (the nvcc extra installs it)")
    sass = subprocess.run([tool, "-c", str(tmp_path / "k.cubin")], capture_output=True, text=True, check=True).stdout
    groups = _hgmma_groups(sass)
    assert groups, "no wgmma group found in the SASS"
    waits = {wait for _, wait in groups}
    if label.endswith(".x3"):
        assert waits == {"0x0"}, groups
        return
    pipelined = [g for g in groups if g[1] == "0x1"]
    assert len(pipelined) >= 2, groups   # the loop's two steps
    a, b = pipelined[0][0], pipelined[1][0]
    assert len(a) == len(b) == 4 and not set(a) & set(b), (a, b)   # four k8 steps, two register sets


@needs_nvcc
def test_resources_cli_prints_a_table_and_progress():
    proc = subprocess.run([sys.executable, "-m", "cuda_kernels.resources", "--arch", "sm_80,sm_90",
                           "--kernel", "cuda.01_naive"],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "arch sm_80" in proc.stdout and "arch sm_90" in proc.stdout
    naive = [(s, c) for s, c in registry.all_configs() if s.name == "cuda.01_naive"]
    for spec, cfg in naive:
        assert proc.stdout.count(f"{spec.name}  {cfg.label}") == 2, proc.stdout
    # Progress: a line per compile on stderr, so a full run is never silent for a minute.
    assert f"compiling {len(naive)} CUDA configurations for sm_80,sm_90" in proc.stderr
    assert f"[{len(naive)}/{len(naive)}] cuda.01_naive" in proc.stderr, proc.stderr


def test_resources_cli_refuses_an_unknown_kernel_or_arch():
    for args in (["--kernel", "cuda.99_nope"], ["--arch", "90"]):
        proc = subprocess.run([sys.executable, "-m", "cuda_kernels.resources", *args],
                              capture_output=True, text=True, cwd=REPO, timeout=120)
        assert proc.returncode == 2 and proc.stderr.startswith("error: "), proc.stderr
        assert proc.stdout == ""


def test_nvcc_from_the_nvidia_wheel_is_found(tmp_path):
    """pip's nvidia-cuda-nvcc (the `nvcc` extra) puts nvcc in site-packages/nvidia/cu13/bin."""
    assert resources.wheel_nvcc([str(tmp_path)]) is None
    nvcc = tmp_path / "nvidia" / "cu13" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    assert resources.wheel_nvcc([str(tmp_path / "elsewhere"), str(tmp_path)]) == str(nvcc)


def _find_nvrtc():
    """libnvrtc from the environment, a CUDA toolkit, or an nvidia-cuda-nvrtc wheel; or None."""
    cands = [os.environ.get("NVRTC_LIBRARY", "")]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            cands += sorted(glob.glob(os.path.join(root, "lib64", "libnvrtc.so*")))
    for p in sys.path:
        cands += sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib", "libnvrtc.so*")))
        cands += sorted(glob.glob(os.path.join(p, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*")))
    found = ctypes.util.find_library("nvrtc")
    if found:
        cands.append(found)
    for c in cands:
        if c and "builtins" not in c and "alt" not in os.path.basename(c):
            try:
                return ctypes.CDLL(c)
            except OSError:
                continue
    return None


def test_sources_compile_under_nvrtc():
    """What CuPy does at run time: NVRTC on the loader's text with the registry's name expressions."""
    lib = _find_nvrtc()
    if lib is None:
        pytest.skip("libnvrtc not found (set NVRTC_LIBRARY, or install nvidia-cuda-nvrtc); nvcc tests cover the rest")
    for fname, cfgs in registry.configs_by_file().items():
        prog = ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), loader.source(fname).encode(), fname.encode(),
                                      0, None, None) == 0
        for c in cfgs:
            assert lib.nvrtcAddNameExpression(prog, c.expr.encode()) == 0
        opts = [o.encode() for o in loader.NVRTC_OPTIONS] + [b"-arch=compute_80"]
        rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, log)
        assert rc == 0, f"NVRTC failed on {fname}:\n{log.value.decode()}"
        for c in cfgs:
            name = ctypes.c_char_p()
            assert lib.nvrtcGetLoweredName(prog, c.expr.encode(), ctypes.byref(name)) == 0, c.expr
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def test_every_stage_is_registered_once():
    cuda = [k for k in cuda_kernels.KERNELS]
    plain = [k for k in cuda if k.variant in ("", "deterministic")]
    want = [s.name for s in STAGES if s.name not in ("naive_blocked", "tiled")]
    assert [k.stage for k in plain] == want
    assert [k.name for k in plain] == [f"cuda.{i:02d}_{s}" for i, s in enumerate(want, 1)]
    for k in cuda:
        want = ("tf32", "tf32x3") if k.stage in ("tf32_mma", "wgmma_tma") else ("fp32",)
        assert _REGISTRY[k.name] is k and k.family == "cuda" and k.precisions == want
    variants = [k for k in cuda if k.variant == "atomic"]
    assert [(k.name, k.variant) for k in variants] == [("cuda.10_split_k_atomic", "atomic"),
                                                       ("cuda.11_stream_k_atomic", "atomic")]


def test_each_source_opens_with_a_header_comment():
    for spec in registry.SPECS:
        path = os.path.join(os.path.dirname(cuda_kernels.__file__), spec.file)
        with open(path, encoding="utf-8") as fh:
            head = fh.read(3000)
        assert head.startswith(f"// Stage {spec.number:02d} - "), spec.file
        body = [l for l in head.splitlines() if l.startswith("//")]
        text = " ".join(body).lower()
        assert len(body) >= 6, f"{spec.file}: header comment too short"
        assert "bottleneck" in text and "cost" in text and "requirement" in text, spec.file


def test_included_stage_files_open_with_a_header_comment_too():
    """A stage's second file (11_stream_k_skinny.cu, pasted into 11_stream_k.cu by the loader)
    carries the ladder's header like the file it belongs to."""
    here = os.path.dirname(cuda_kernels.__file__)
    extra = sorted(f for f in os.listdir(here) if re.match(r"\d\d_.*\.cu$", f)
                   and f not in {s.file for s in registry.SPECS})
    assert "11_stream_k_skinny.cu" in extra
    for f in extra:
        with open(os.path.join(here, f), encoding="utf-8") as fh:
            head = fh.read(4000)
        assert head.startswith(f"// Stage {f[:2]} - "), f
        text = " ".join(l for l in head.splitlines() if l.startswith("//")).lower()
        assert all(w in text for w in ("bottleneck removed", "still there", "cost", "requirement")), f
        owner = next(s for s in registry.SPECS if s.number == int(f[:2]))
        assert f'#include "{f}"' in open(os.path.join(here, owner.file), encoding="utf-8").read(), f


def _ptx(tmp_path, spec, cfg, arch: str) -> str:
    """The PTX nvcc makes of one configuration for ``arch``, with the loader's NVRTC options."""
    src, ptx = tmp_path / f"{cfg.label}.cu", tmp_path / f"{cfg.label}.ptx"
    src.write_text(resources.instantiation_source(spec, cfg))
    subprocess.run([resources.nvcc_path(), "-ptx", f"-arch={arch}", *loader.NVRTC_OPTIONS, "-o", str(ptx), str(src)],
                   check=True, capture_output=True)
    return ptx.read_text()


def _skinny_configs():
    spec = next(s for s in registry.SPECS if s.name == "cuda.11_stream_k")
    return spec, [c for c in spec.configs if c.kernel in ("gemv_row", "skinny_n")]


@needs_nvcc
@pytest.mark.parametrize("arch", list(ARCH_LIMITS))
def test_skinny_paths_load_16_bytes_only_in_their_aligned_builds(tmp_path, arch):
    """The bandwidth-bound paths stream their big operand with 16-byte loads (ld.global.v4.f32 in
    the PTX) in the .vec builds, and their .scalar builds (rows not 16-byte aligned) have none: a
    16-byte load there would fault on the GPU."""
    spec, cfgs = _skinny_configs()
    assert len(cfgs) == 2 + len(registry.SKINNY_BUILDS)
    for cfg in cfgs:
        text = _ptx(tmp_path, spec, cfg, arch)
        v4 = len(re.findall(r"ld\.global(?:\.nc)?\.v4\.f32", text))
        scalar = len(re.findall(r"ld\.global(?:\.nc)?\.f32", text))
        if cfg.label.endswith(".vec"):
            # gemv: 4 rows in flight per thread (+ the range's tail); skinny_n: E / 4 per row of the thread's R
            want = 4 if cfg.kernel == "gemv_row" else cfg.targs[1] * cfg.targs[3] // 4
            assert v4 >= want, f"{cfg.label} on {arch}: {v4} 16-byte global loads, want >= {want}"
        else:
            assert v4 == 0 and scalar > 0, f"{cfg.label} on {arch}: {v4} 16-byte global loads in the scalar build"


@needs_nvcc
@pytest.mark.parametrize("arch", list(ARCH_LIMITS))
def test_skinny_n_scalar_builds_keep_two_chunks_in_flight_where_registers_allow(tmp_path, arch):
    """skinny_n's scalar builds (K % 4 != 0) issue chunk c + 1's A loads before chunk c is computed,
    as the float4 builds do: the PTX holds two copies of a chunk's loads (the prologue's and the
    loop's), R rows x E four-byte read-only (.nc) loads each (C's reads are plain loads). Below
    sm_90 the N = 2 and 4 builds keep one copy (two spilled on sm_80). With one copy 65536x1x4095 ran at 81.5% of cuBLAS on an
    H200, with two 103.4% (results/h200/skinny-scalar/)."""
    spec, cfgs = _skinny_configs()
    scalar_builds = [c for c in cfgs if c.kernel == "skinny_n" and c.label.endswith(".scalar")]
    assert sorted({c.targs[0] for c in scalar_builds}) == list(registry.SKINNY_NB)
    for cfg in scalar_builds:
        nb, rows, per_row = cfg.targs[0], cfg.targs[1], cfg.targs[3]
        text = _ptx(tmp_path, spec, cfg, arch)
        loads = len(re.findall(r"ld\.global\.nc\.f32", text))
        copies = 2 if nb in (1, 8) or arch == "sm_90" else 1
        assert loads == copies * rows * per_row, f"{cfg.label} on {arch}: {loads} four-byte loads of A"


@needs_nvcc
def test_skinny_paths_keep_the_blocks_their_split_model_counts_on(compiled_by_arch):
    """gemv_row: >= 4 blocks per SM (heuristics.GEMV_COST: 4 x 16 KiB of loads in flight per SM);
    skinny_n: >= 2 (SKINNY_COST: 2 x 16-32 KiB); the ~18 KiB per SM that covers DRAM latency on an
    H100 (3.35 TB/s x ~0.7 us / 132 SMs) either way."""
    for arch in ARCH_LIMITS:
        got = {r["config"]: r["blocks_per_sm"] for r in compiled_by_arch[arch] if r["kernel"] == "cuda.11_stream_k"
               and r["config"].startswith(("gemv.", "skinny_n"))}
        assert len(got) == 2 + len(registry.SKINNY_BUILDS), got
        for label, blocks in got.items():
            assert blocks >= (4 if label.startswith("gemv") else 2), f"{label} on {arch}: {blocks} blocks per SM"


def _skinny_short_configs():
    spec = next(s for s in registry.SPECS if s.name == "cuda.11_stream_k")
    return spec, [c for c in spec.configs if c.kernel == "skinny_short"]


@needs_nvcc
def test_skinny_short_keeps_two_blocks_per_sm_without_spills(tmp_path):
    """skinny_b=resident's builds (every N build, 4 and 8 lanes, float4 and scalar) on sm_90: no
    spills, <= 128 registers (its __launch_bounds__(256, 2)), >= 2 blocks per SM: the persistent
    grid (heuristics.skinny_short_plan) launches SMs x 2 blocks and counts on them being resident."""
    spec, cfgs = _skinny_short_configs()
    assert len(cfgs) == len(registry.SKINNY_NB) * len(registry.SKINNY_SHORT_LANES) * 2
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        rows = [r[0] for r in ex.map(lambda c: resources.compile_config_archs(spec, c, ["sm_90"], str(tmp_path)), cfgs)]
    for cfg, r in zip(cfgs, rows):
        assert r["ok"], f"{cfg.label}: {r.get('log')}"
        assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{cfg.label} spills: {r}"
        assert r["registers"] <= 128 and r["blocks_per_sm"] >= 2, f"{cfg.label}: {r}"


@needs_nvcc
def test_skinny_short_loads_16_bytes_only_in_its_aligned_builds(tmp_path):
    """The .vec builds read A with 16-byte loads (8 slots of a row per thread: >= 8 ld.global.v4 in
    the PTX); the .scalar builds (K % 4 != 0 or A misaligned) have none."""
    spec, cfgs = _skinny_short_configs()
    for cfg in cfgs:
        text = _ptx(tmp_path, spec, cfg, "sm_90")
        v4 = len(re.findall(r"ld\.global(?:\.nc)?\.v4\.f32", text))
        scalar = len(re.findall(r"ld\.global(?:\.nc)?\.f32", text))
        if cfg.label.endswith(".vec"):
            assert v4 >= 8, f"{cfg.label}: {v4} 16-byte global loads, want >= 8"
        else:
            assert v4 == 0 and scalar >= 32, f"{cfg.label}: {v4} 16-byte, {scalar} 4-byte global loads"


def test_importing_cuda_kernels_does_not_import_cupy():
    code = "import sys, cuda_kernels; sys.exit(1 if 'cupy' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


@pytest.mark.parametrize("name", ["cuda.06_vectorized", "cuda.07_bank_conflict_free"])
def test_float4_stages_say_why_they_refuse_unaligned_shapes(name):
    k = _REGISTRY[name]
    assert k.why_not(Problem(128, 128, 128)) is None
    assert k.why_not(Problem(1, 4, 4096)) is None  # M is free
    for M, N, K in [(128, 1001, 128), (128, 128, 1023), (7, 33, 127)]:
        why = k.why_not(Problem(M, N, K))
        assert why and "N % 4 == 0 and K % 4 == 0" in why and f"N={N}" in why and f"K={K}" in why, why


@pytest.mark.parametrize("name", [k.name for k in cuda_kernels.KERNELS
                                  if k.stage not in ("vectorized", "bank_conflict_free", "wgmma_tma")])
def test_other_stages_take_any_shape(name):
    k = _REGISTRY[name]
    mine, other = (("tf32", "tf32x3"), "fp32") if k.stage == "tf32_mma" else (("fp32",), "tf32")
    for M, N, K in [(1, 1, 1), (7, 33, 127), (4097, 1, 1023), (255, 1000, 4097)]:
        for pr in mine:
            assert k.why_not(Problem(M, N, K, precision=pr)) is None
    assert f"no {other} path" in k.why_not(Problem(8, 8, 8, precision=other))


def test_split_plan():
    s, chunk = heuristics.split_plan(256, 256, 131072, sm_count=132, bk=16)
    assert s >= 32 and chunk % 16 == 0 and (s - 1) * chunk < 131072 <= s * chunk
    s, chunk = heuristics.split_plan(512, 512, 65536, sm_count=132, bk=16)
    assert s >= 8 and chunk >= heuristics.MIN_SPLIT_CHUNK
    assert heuristics.split_plan(4096, 4096, 4096, sm_count=132, bk=16) == (1, 4096)
    assert heuristics.split_plan(8192, 8192, 8192, sm_count=132, bk=16)[0] == 1
    assert heuristics.split_plan(256, 256, 200, sm_count=132, bk=16)[0] == 1  # K too short to split
    # A forced count (the split_k option) is rounded so chunks stay multiples of BK.
    s, chunk = heuristics.split_plan(255, 127, 1000, sm_count=132, bk=16, splits=7)
    assert chunk % 16 == 0 and (s - 1) * chunk < 1000 <= s * chunk and s <= 7
    from compare.harness.errors import UsageError
    with pytest.raises(UsageError, match="must be >= 1"):
        _REGISTRY["cuda.10_split_k"].parse_options({"split_k": "0"})


def test_tile_option_is_checked():
    from compare.harness.errors import UsageError
    with pytest.raises(UsageError, match="must be one of 128x128x16, 128x128x8, 128x128x8s3, "):
        _REGISTRY["cuda.09_double_buffered"].parse_options({"tile": "64x64x8"})
    assert registry.DEFAULT_TILE[9] == "128x128x8s3" and registry.DEFAULT_TILE[10] == "128x128x16"
    for t in registry.VARIANTS_09:  # stage-09-only variants: accepted by 09, refused by 10
        assert _REGISTRY["cuda.09_double_buffered"].parse_options({"tile": t}) == {"tile": t}
        with pytest.raises(UsageError, match="must be one of"):
            _REGISTRY["cuda.10_split_k"].parse_options({"tile": t})


def test_config_expressions_are_unique_and_declared_once():
    exprs = [(s.file, c.expr) for s, c in registry.all_configs()]
    assert len(exprs) == len(set(exprs))
    for fname, cfgs in registry.configs_by_file().items():
        src = loader.source(fname)
        for c in cfgs:
            assert re.search(rf"\b{c.kernel}\s*\(", src), f"{c.kernel} not defined in {fname}"


# ---- stage 12 (TF32 mma.sync) ------------------------------------------------------------------

def test_tf32_stage_declares_each_tile_for_both_precisions_once():
    """One spec, two precisions: each tile has a .vec and a .scalar configuration for every
    precision it declares, tf32 (SPLIT3 = false) and tf32x3 (SPLIT3 = true, label suffix .x3),
    nothing else; each precision's default tile is among them."""
    spec = next(s for s in registry.SPECS if s.stage == "tf32_mma")
    assert spec.precisions == ("tf32", "tf32x3") and spec.tiles == tuple(registry.TF32_TILES)
    got = {c.label: c.targs for c in spec.configs}
    for pr, tile in registry.TF32_DEFAULT_TILE.items():
        assert pr in registry.TF32_TILES[tile][-1]
    for tile, (bm, bn, bk, wm, wn, stages, minbs) in registry.TF32_TILES.items():
        for vec in (True, False):
            for pr, minb in minbs.items():
                split3, suffix = pr == "tf32x3", ".x3" if pr == "tf32x3" else ""
                label = f"{tile}.{'vec' if vec else 'scalar'}{suffix}"
                assert got.pop(label) == (bm, bn, bk, wm, wn, stages, minb, vec, split3), label
                cfg = spec.config(label)
                assert cfg.smem_dynamic == stages * (bm * (bk + 4) + bk * (bn + 8)) * 4 > 48 * 1024
                assert cfg.threads == 32 * (bm // wm) * (bn // wn)
    assert not got, got


@pytest.mark.parametrize("tile", list(registry.TF32_TILES))
def test_tf32_shared_memory_pads_make_fragment_reads_conflict_free(tile):
    """The header's bank claims, from the tile constants: an ldmatrix phase reads 8 rows of 16
    bytes of A (rows BK+4 floats apart) and must hit 8 disjoint 4-bank groups; the B fragment
    read of lane (g, t) is word t*(BN+8) + g and must hit 32 distinct banks. Every row start
    stays 16-byte aligned (cp.async 16 and ldmatrix need it)."""
    bm, bn, bk, *_ = registry.TF32_TILES[tile]
    a_ld, b_ld = bk + 4, bn + 8
    for k0 in range(0, bk, 4):
        banks = [(r * a_ld + k0 + j) % 32 for r in range(8) for j in range(4)]
        assert len(set(banks)) == 32, (tile, k0)
    assert len({(t * b_ld + g) % 32 for g in range(8) for t in range(4)}) == 32
    assert a_ld % 4 == 0 and b_ld % 4 == 0 and (bm * a_ld) % 4 == 0


def test_tf32_source_uses_the_tensor_core_instructions():
    src = loader.source("12_tf32_mma.cu")
    for ins in ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32",
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async"):
        assert ins in src, ins


def test_tf32_stage_refuses_a_gpu_with_too_little_shared_memory():
    """Stage 12 asks for 105 KiB per block: on a GPU that allows less (sm_86 / sm_89: 99 KiB)
    prepare says so before compiling or launching anything."""
    from compare.harness.errors import UsageError

    class SmallGpu:
        def smem_optin(self):
            return 99 * 1024

        @staticmethod
        def address(x):
            return 0

        def function(self, *a, **k):
            raise AssertionError("must refuse before compiling")

    class Inputs:
        def cupy(self, name):
            return name

    k = _REGISTRY["cuda.12_tf32_mma"]
    with loader.use_backend(SmallGpu()):
        with pytest.raises(UsageError, match=r"needs 107520 bytes of shared memory per block; .* at most 101376"):
            k.prepare(Problem(256, 256, 256, precision="tf32"), Inputs(), {})


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

    def __bool__(self):   # as a CuPy array of many elements: a launch must not test a buffer's truth
        raise ValueError("The truth value of an array with more than one element is ambiguous")


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

    @staticmethod
    def sm_count():
        return 132


class _Inputs:
    def __init__(self, p):
        self.bufs = {"A": _Buf(p.M * p.K), "B": _Buf(p.K * p.N), "C": _Buf(p.M * p.N)}

    def cupy(self, name):
        return self.bufs[name]


PAD_AS_IS, PAD_ROUND, PAD_SPLIT = 0, 1, 2   # pad_rows' modes, as 13_wgmma_tma.cu's PadMode numbers them


def test_pad_modes_are_numbered_as_the_kernel_numbers_them():
    """The launch's pad modes and 13_wgmma_tma.cu's PadMode: one numbering (a mode read as another
    rounds A where it should split it, or copies it unrounded)."""
    from cuda_kernels import wgmma_launch
    enum = re.search(r"enum PadMode \{([^}]*)\}", loader.source("13_wgmma_tma.cu")).group(1)
    kernel = {name: int(v) for name, v in re.findall(r"(PAD_\w+) = (\d+)", enum)}
    launch = {name: getattr(wgmma_launch, name) for name in ("PAD_AS_IS", "PAD_ROUND", "PAD_SPLIT")}
    assert kernel == launch == {"PAD_AS_IS": PAD_AS_IS, "PAD_ROUND": PAD_ROUND, "PAD_SPLIT": PAD_SPLIT}


def _pad_jobs(launches):
    """The (src, rows, cols, out, ld, out_small, mode) of each matrix stage 13's pad_rows launches
    copy: its first seven arguments, and the next seven where they name a second matrix (a null
    source otherwise); out_small is null unless mode is PAD_SPLIT."""
    for label, _, _, args, _ in launches:
        if label == "pad_rows":
            assert len(args) == 14, args
            for job in (args[:7], args[7:]):
                if not isinstance(job[0], _Buf):
                    assert job == (0, 0, 0, 0, 0, 0, 0), args
                    continue
                assert isinstance(job[5], _Buf) == (job[6] == PAD_SPLIT), job
                yield job


@pytest.mark.parametrize("shape, precision, options, want", [
    ((256, 256, 256), "tf32", {}, (["256x128x32s4.regb"], "swap", "")),
    ((300, 260, 4096), "tf32", {"b_transpose": "copy"}, (["prepare.transpose", "128x256x32s4"], "copy", "")),
    ((256, 255, 256), "tf32", {"b_transpose": "copy"}, (["prepare.transpose", "128x256x32s4"], "copy", "")),
    ((256, 255, 256), "tf32", {}, (["256x128x32s4.regb.cpasync"], "swap", "")),
    ((256, 255, 256), "tf32", {"b_unaligned": "pad"}, (["pad_rows", "256x128x32s4.regb"], "swap", "")),
    # tf32x3 on the swap path splits A in shared memory (.asplit) where N <= 384 (a_split=smem), A's
    # rows padded by a copy first where K % 4 != 0, read as given otherwise; else by the split copy.
    ((300, 1003, 997), "tf32x3", {"b_unaligned": "cp_async"},
     (["pad_rows", "64x128x32s6.regb.x3.cpasync"], "swap", "copied")),
    ((300, 1003, 997), "tf32x3", {"b_unaligned": "cp_async", "a_split": "smem"},
     (["pad_rows", "64x128x32s6.regb.x3.asplit.cpasync"], "swap", "padded")),
    ((300, 1003, 997), "tf32x3", {"a_split": "smem"},
     (["pad_rows", "64x128x32s6.regb.x3.asplit"], "swap", "padded")),   # A's and B's rows: one launch
    ((300, 1003, 997), "tf32x3", {}, (["pad_rows", "64x128x32s6.regb.x3"], "swap", "copied")),
    ((60, 1003, 997), "tf32x3", {}, (["pad_rows", "64x128x32s6.regb.x3.cpasync"], "swap", "copied")),
    ((256, 384, 256), "tf32x3", {}, (["128x128x32s4.regb.x3.asplit"], "swap", "")),
    ((256, 388, 256), "tf32x3", {}, (["pad_rows", "128x128x32s4.regb.x3"], "swap", "copied")),
    # M = 100 > 64: two rows of 64-row tiles read B twice, so pad (on a 256-row tile it would be cp_async).
    ((100, 1003, 997), "tf32", {}, (["pad_rows", "64x128x32s8.regb"], "swap", "copied")),
    ((256, 256, 255), "tf32", {}, (["pad_rows", "256x128x32s4.regb"], "swap", "copied")),
    # N <= 128: one bulk copy per K tile, whatever the rows of tiles (no copy of B).
    ((256, 127, 256), "tf32", {}, (["256x128x32s4.regb.bulk"], "swap", "")),
    ((300, 61, 997), "tf32x3", {}, (["pad_rows", "64x128x32s6.regb.x3.asplit.bulk"], "swap", "padded")),
    ((300, 61, 997), "tf32x3", {"a_split": "copy"},
     (["pad_rows", "64x128x32s6.regb.x3.bulk"], "swap", "copied")),
    ((300, 61, 997), "tf32x3", {"b_unaligned": "cp_async"},
     (["pad_rows", "64x128x32s6.regb.x3.asplit.cpasync"], "swap", "padded")),
    ((1000, 1003, 997), "tf32x3", {"b_transpose": "copy"},
     (["prepare.transpose.split", "pad_rows", "128x128x32s3.x3"], "copy", "copied")),
    ((256, 256, 256), "tf32x3", {}, (["128x128x32s4.regb.x3.asplit"], "swap", "")),
    ((256, 256, 256), "tf32x3", {"a_split": "copy"}, (["pad_rows", "128x128x32s4.regb.x3"], "swap", "copied")),
    ((300, 260, 256), "tf32x3", {}, (["64x128x32s6.regb.x3.asplit"], "swap", "")),
])
def test_wgmma_prepare_chooses_the_operand_paths(monkeypatch, shape, precision, options, want):
    """Stage 13's prepare on a recording device: which copies run before the GEMM, in order, the
    GEMM's grid and arguments, and the tensor maps' geometry (rows, columns, row stride in floats,
    box rows) for the path it picked: B read by TMA as stored (N % 4 == 0), else B's rows loaded
    by cp.async in the GEMM (B's own address passed, no copy) or, with b_unaligned=pad, padded to a
    multiple of 4 floats by a copy; B copied K-major with b_transpose=copy; A copied where K % 4
    != 0 or for the split."""
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
        opts = {"split_k": 1, **options}
        if b_path == "swap":
            opts["tile"] = labels[-1].removesuffix(".cpasync").removesuffix(".bulk").removesuffix(".asplit")
        launch = k.prepare(p, inputs, opts)
        launch()
    assert [l[0] for l in dev.launches] == labels
    M, N, K = shape
    kp = -(-K // 4) * 4
    gemm = dev.launches[-1]
    cfg = registry.SPECS[[s.stage for s in registry.SPECS].index("wgmma_tma")].config(labels[-1])
    bm, bn = cfg.tile
    assert gemm[1] == ((-(-M // bm)) * (-(-N // bn)), 1, 1) and gemm[2] == (384, 1, 1)
    assert gemm[4]["shared_mem"] == cfg.smem_dynamic > 160 * 1024
    assert gemm[3][4:9] == (M, N, K, 0.5, 2.0) and gemm[3][9] is inputs.bufs["C"]
    assert gemm[3][10] == -(-K // 32) and gemm[3][11] == 0   # one split: all of K, no partials
    b_async = labels[-1].endswith((".cpasync", ".bulk"))
    # The register-operand kernel's argument after its 3 tensor maps: B's rows where it loads them.
    # 3 maps + B's rows, or 4 maps; then M, N, K, alpha, beta, C, K tiles, partials; the register-operand
    # kernel's stream-K arguments last (workspace, stream-K tiles, blocks, iterations per block, extra): none.
    assert len(gemm[3]) == (12 if b_path == "copy" else 17)
    assert b_path == "copy" or gemm[3][12:] == (0, 0, 0, 0, 0)
    if b_path == "swap":
        assert (gemm[3][3] is inputs.bufs["B"]) if b_async else gemm[3][3] == 0
    a_map = maps[0]
    assert a_map[1:3] == (M, K) and a_map[3] == (kp if a_copied else K)
    assert (a_map[0] == inputs.bufs["A"].addr) == (not a_copied)
    if b_async:
        # No copy of B: the GEMM loads its rows (its fourth argument, above); no tensor map of B.
        assert not any(job[0] is inputs.bufs["B"] for job in _pad_jobs(dev.launches))
        assert all(m[0] != inputs.bufs["B"].addr for m in maps)
        assert launch.config["b_transpose"].startswith(
            "B's rows loaded as stored, one bulk copy" if labels[-1].endswith(".bulk") else
            "B's rows loaded as stored by the producer warpgroup")
    elif b_path == "swap" and N % 4:
        # Rows padded to a multiple of 4 floats first (one pass over B), TMA reads the padded copy.
        ldb = -(-N // 4) * 4
        pad = next(job for job in _pad_jobs(dev.launches) if job[0] is inputs.bufs["B"])
        assert pad[1:3] == (K, N) and pad[4] == ldb
        assert pad[3].n == K * ldb and maps[1] == (pad[3].addr, K, N, ldb, 32)
        assert launch.config["b_transpose"].startswith(f"B's rows padded to {ldb} floats")
    elif b_path == "swap":
        assert maps[1] == (inputs.bufs["B"].addr, K, N, N, 32)
    if b_path == "swap":
        assert a_map[4] == bm and len(maps) == (2 if b_async else 3)
        split3 = precision == "tf32x3"
        a_small = maps[-1]   # A's small part: its own copy (the B-map slot repeats A's map where B is loaded)
        assert (a_small[0] != a_map[0]) == (split3 and a_copied == "copied") and a_small[1:] == a_map[1:]
    else:
        assert maps[1][1:] == (N, K, kp, bn) and maps[1][0] != inputs.bufs["B"].addr and len(maps) == 4
        t = dev.launches[0]
        assert t[0].startswith("prepare.transpose") and t[1] == (-(-N // 32), -(-K // 32), 1)
        assert t[3][0] is inputs.bufs["B"] and t[3][1:3] == (K, N) and t[3][-1] == kp
    # The GEMM's map arguments in the kernel's order (tA, tB, tAs[, tBs]), by the buffer each reads:
    # A (or its copy's big part) first, A's small part third (A again unsplit); the list of maps
    # made says nothing of which goes where (A's big and small swapped: tf32x3 loses b_s * a_b).
    # A's rows to kp floats: values unchanged where the GEMM splits them, else rounded to TF32, or
    # for tf32x3 split into big and small parts (two outputs), all in the one pad launch.
    pad_a = next((job for job in _pad_jobs(dev.launches) if job[0] is inputs.bufs["A"]), None)
    assert (pad_a is not None) == bool(a_copied)
    if pad_a:
        assert pad_a[1:3] == (M, K) and pad_a[4] == kp and pad_a[3].n == M * kp
        assert pad_a[6] == (PAD_AS_IS if a_copied == "padded" else PAD_SPLIT if precision == "tf32x3" else PAD_ROUND)
        assert pad_a[6] != PAD_SPLIT or (pad_a[5].n == M * kp and pad_a[5] is not pad_a[3])
    # One pad launch at most (A's and B's rows in it), its grid over both matrices' floats.
    pad_launches = [l for l in dev.launches if l[0] == "pad_rows"]
    assert len(pad_launches) <= 1
    if pad_launches:
        floats = sum(int(j[1]) * int(j[2]) for j in _pad_jobs(dev.launches))
        assert pad_launches[0][1] == (min(-(-floats // 256), 16 * 132), 1, 1)
    want_a, want_as = ((pad_a[3].addr, (pad_a[5] if pad_a[6] == PAD_SPLIT else pad_a[3]).addr) if pad_a
                       else (inputs.bufs["A"].addr,) * 2)
    slots = [maps[i - 1][0] for i in gemm[3][:4 if b_path == "copy" else 3]]
    assert slots[0] == want_a and slots[2] == want_as and (b_async or slots[1] == maps[1][0])
    assert launch.config["b_transpose"].startswith("B copied" if b_path == "copy" else "B's rows loaded" if b_async
                                                 else "B's rows padded" if N % 4 else "B read by TMA as stored")
    assert launch.config["a_operand"].startswith("copied") == (a_copied == "copied")
    assert launch.config["a_operand"].startswith("rows padded") == (a_copied == "padded")
    assert ("split into big + small TF32 parts in shared memory" in launch.config["a_operand"]) == \
        (".asplit" in labels[-1])


class _AnyFileRecorder(_Sm90Recorder):
    """_Sm90Recorder that also records stage 11's functions (its bandwidth-bound paths)."""

    def function(self, filename, cfg, expressions, arch=""):
        assert cfg.expr in expressions and arch == ("sm_90a" if filename == "13_wgmma_tma.cu" else "")
        return lambda grid, block, args, **kw: self.launches.append((filename, cfg.label, grid, args))


@pytest.mark.parametrize("shape, precision, options, want_file, want_label, want_path", [
    ((1, 4096, 1000), "tf32", {}, "11_stream_k.cu", "gemv.vec", "gemv"),
    ((1, 4095, 1000), "tf32x3", {}, "11_stream_k.cu", "gemv.scalar", "gemv"),
    ((4096, 4, 4096), "tf32x3", {}, "11_stream_k.cu", "skinny_n4.vec", "skinny_n"),
    ((1, 8, 4096), "tf32", {}, "11_stream_k.cu", "skinny_n8.few_rows.vec", "skinny_n"),     # N <= 8 first, as stage 11's rule
    ((65536, 1, 4095), "tf32", {}, "11_stream_k.cu", "skinny_n1.scalar", "skinny_n"),
    ((4096, 9, 4096), "tf32", {}, "13_wgmma_tma.cu", None, "tile"),                 # N = 9: a tile problem
    ((2, 4096, 4096), "tf32x3", {}, "13_wgmma_tma.cu", None, "tile"),               # M = 2 is not a GEMV
    ((1, 4096, 1000), "tf32", {"path": "tile"}, "13_wgmma_tma.cu", None, "tile"),
    ((1, 4096, 1000), "tf32x3", {"split_k": 2}, "13_wgmma_tma.cu", None, "tile"),   # a tensor-core option: tile
    # tf32x3 with 9 <= N <= 64 and M > 64: stage 11's tile plan (ffma); N = 65, M = 64 (a tiny output),
    # tf32, or a tensor-core option: wgmma.
    ((64, 25, 6893), "tf32x3", {}, "13_wgmma_tma.cu", None, "tile"),
    ((65, 25, 6893), "tf32x3", {}, "11_stream_k.cu", None, "ffma"),
    ((3074, 25, 6893), "tf32x3", {}, "11_stream_k.cu", None, "ffma"),
    ((300, 64, 999), "tf32x3", {}, "11_stream_k.cu", None, "ffma"),
    ((3074, 9, 6893), "tf32x3", {}, "11_stream_k.cu", None, "ffma"),
    ((300, 65, 999), "tf32x3", {}, "13_wgmma_tma.cu", None, "tile"),
    ((3074, 25, 6893), "tf32", {}, "13_wgmma_tma.cu", None, "tile"),
    ((3074, 25, 6893), "tf32x3", {"a_split": "copy"}, "13_wgmma_tma.cu", None, "tile"),
    ((3074, 25, 6893), "tf32", {"path": "ffma"}, "11_stream_k.cu", None, "ffma"),
])
def test_wgmma_hands_streams_to_the_bandwidth_paths(monkeypatch, shape, precision, options, want_file, want_label,
                                                    want_path):
    """Stage 13's path rule (WGMMA_PATH_RULE): a single row or N <= 8 is a stream of one operand,
    so auto takes stage 11's gemv / skinny_n launch (fp32 FFMA, no tensor cores; its config says
    why); tf32x3 with N <= 64 takes stage 11's tile plan (ffma: a wgmma tile would compute at least
    twice N's columns) where M > 64 (stage 11's 128-row tiles at least half full); every other shape,
    or any tensor-core option, the wgmma launch."""
    from cuda_kernels import tma
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    p = Problem(*shape, precision=precision)
    dev, inputs = _AnyFileRecorder(), _Inputs(p)
    with loader.use_backend(dev):
        launch = _REGISTRY["cuda.13_wgmma_tma"].prepare(p, inputs, dict(options))
        launch()
    files = {l[0] for l in dev.launches}
    assert launch.config["path"] == want_path
    if want_path == "tile":
        assert files == {"13_wgmma_tma.cu"} and "wgmma" in launch.config["precision_path"]
        return
    assert launch.config["path_rule"] == heuristics.WGMMA_PATH_RULE
    assert "tf32x3 with N <= 64 and M >= 65" in launch.config["path_rule"]
    if want_path == "ffma":   # stage 11's stream-K tile kernel, its own plan, named as stage 11 names it
        assert files == {"11_stream_k.cu"} and dev.launches[0][1].startswith(launch.config["tile"]), dev.launches
        assert launch.config["precision_path"].startswith("fp32 FFMA on stage 11's tile plan, not the tensor cores")
        assert precision in launch.config["precision_path"] and launch.config["runs"] == "cuda.11_stream_k's tile path"
        assert launch.config["chosen_by"].startswith("user" if options else "heuristic")
        return
    assert files == {"11_stream_k.cu"} and dev.launches[0][1] == want_label
    assert launch.config["precision_path"].startswith("fp32 FFMA on stage 11's bandwidth-bound path, not the tensor "
                                                      "cores") and precision in launch.config["precision_path"]
    assert launch.config["runs"] == f"cuda.11_stream_k's {want_path} path"


@pytest.mark.parametrize("shape, precision, options, match", [
    ((2, 64, 64), "tf32", {"path": "gemv"}, "path=gemv multiplies a single row; this problem has M=2"),
    ((64, 9, 64), "tf32x3", {"path": "skinny_n"}, "path=skinny_n takes N <= 8; this problem has N=9"),
    ((1, 64, 64), "tf32", {"path": "gemv", "split_k": 2}, "split_k set the tile path's plan; path=gemv has none"),
    ((64, 64, 64), "tf32", {"a_split": "smem"}, "a_split=smem is an option of tf32x3 on the swap path"),
    ((64, 64, 64), "tf32x3", {"a_split": "copy", "b_transpose": "copy"}, "with b_transpose=copy"),
    ((640, 640, 4096), "tf32", {"split_k": 2, "mode": "sk"}, "split_k=2 and mode=sk are two ways to split K"),
    ((640, 640, 4096), "tf32", {"grid": 8, "mode": "dp"}, "grid sets the stream-K blocks; mode=dp has none"),
    ((640, 640, 4096), "tf32x3", {"mode": "hybrid", "b_transpose": "copy"}, "stream-K runs on the swap path"),
])
def test_wgmma_refuses_contradicting_path_options_before_any_launch(monkeypatch, shape, precision, options, match):
    from compare.harness.errors import UsageError
    from cuda_kernels import tma
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    p = Problem(*shape, precision=precision)
    dev, inputs = _AnyFileRecorder(), _Inputs(p)
    allocated = _Buf._next[0]
    with loader.use_backend(dev), pytest.raises(UsageError, match=re.escape(match)):
        _REGISTRY["cuda.13_wgmma_tma"].prepare(p, inputs, dict(options))
    assert dev.launches == [] and _Buf._next[0] == allocated   # nothing allocated, nothing launched


@pytest.mark.parametrize("shape, precision, options, want", [
    ((1733, 588, 1347), "tf32x3", {}, "sk"),          # 14 x 5 = 70 tiles of 128 x 128 <= 0.75 x 132, no K split
    ((1733, 588, 1347), "tf32", {}, None),            # tf32: no stream-K by default
    ((1733, 588, 1347), "tf32x3", {"mode": "dp"}, None),
    ((1733, 588, 1347), "tf32x3", {"split_k": 1}, None),
    ((4096, 4096, 4096), "tf32x3", {}, None),         # 1024 tiles: full waves
    ((2000, 3000, 1000), "tf32", {"mode": "hybrid"}, "hybrid"),
    ((300, 1000, 2000), "tf32", {"grid": 7}, "sk"),
])
def test_wgmma_stream_k_plan_launch_and_cover(monkeypatch, shape, precision, options, want):
    """Stage 13's stream-K: taken by default only for tf32x3 tiles filling at most 3/4 of the SMs
    with no K split, or as forced; then the GEMM's grid is the stream-K blocks plus the
    data-parallel tiles, its last five arguments the workspace (two TM x 128 slots per stream-K
    block), the stream-K tiles and blocks and the iterations per block, the blocks' ranges cover
    the stream-K tiles' K tiles exactly once, and the fixup runs over the stream-K tiles."""
    from cuda_kernels import tma
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    M, N, K = shape
    p = Problem(M, N, K, precision=precision, alpha=0.5, beta=2.0)
    dev, inputs = _Sm90Recorder(), _Inputs(p)
    with loader.use_backend(dev):
        launch = _REGISTRY["cuda.13_wgmma_tma"].prepare(p, inputs, dict(options))
        launch()
    gemm = next(l for l in dev.launches if ".regb" in l[0])
    assert gemm[0].endswith(".sk") == (want is not None)   # the stream-K build only where it runs
    if want is None:
        assert launch.stream_k is None and launch.config["mode"] == "dp"
        assert gemm[3][12:] == (0, 0, 0, 0, 0) and not any(l[0].startswith("sk_fixup") for l in dev.launches)
        return
    sk = launch.stream_k
    assert sk.mode == want and launch.config["mode"] == want and launch.config["split_k"] == 1
    tm = int(gemm[0].split("x")[0])
    tiles = -(-M // tm) * -(-N // 128)
    ipt = -(-K // 32)
    assert sk.tiles == tiles and sk.iters_per_tile == ipt
    if "grid" in options:
        assert sk.sk_blocks == options["grid"]
    ws, sk_tiles, sk_blocks, ipb, extra = gemm[3][12:]
    assert (sk_tiles, sk_blocks, ipb, extra) == (sk.sk_tiles, sk.sk_blocks, sk.iters_per_block, sk.extra_iters)
    assert ws.n == sk_blocks * 2 * tm * 128
    assert gemm[1] == (sk_blocks + tiles - sk_tiles, 1, 1)
    # Block b's range [b * ipb + min(b, extra), + ipb + (b < extra)): together exactly [0, sk_tiles * ipt).
    covered = []
    for b in range(sk_blocks):
        start = b * ipb + min(b, extra)
        covered += range(start, start + ipb + (1 if b < extra else 0))
    assert covered == list(range(sk_tiles * ipt))
    fix = dev.launches[-1]
    assert fix[0] == f"sk_fixup.{tm}" and fix[1] == (sk_tiles, tm * 128 // 512, 1) and fix[3][6] is ws
    assert launch.config["reduction"].startswith("stream-K tiles' partials")


@pytest.mark.parametrize("shape, precision, split_k, want_splits", [
    ((300, 260, 4096), "tf32", 4, 4),          # forced: 4 chunks of 1024 (32 K tiles each)
    ((64, 64, 100_000), "tf32", None, None),    # one tile, long K: the model must split
    ((128, 100, 1000), "tf32x3", 3, 3),          # K = 1000: chunks 352, 352, 296 (whole 32-wide K tiles)
    ((4096, 4096, 4096), "tf32", None, 1),       # 128 tiles fill the SMs: no split, no second pass
])
def test_wgmma_split_k_covers_k_once_and_sums_in_a_second_pass(monkeypatch, shape, precision, split_k, want_splits):
    """Stage 13's split-K: the GEMM's grid gets one y-slice per split, each owning whole 32-wide K
    tiles [z * kps, (z + 1) * kps) so that together they cover ceil(K / 32) tiles exactly once with
    no empty split; the partial tiles go to a workspace of splits * M * N floats, and a second
    launch (splitk_reduce) sums them with alpha and beta into C. One split: no workspace (null
    pointer) and no second launch."""
    from cuda_kernels import tma
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    M, N, K = shape
    p = Problem(M, N, K, precision=precision, alpha=0.5, beta=2.0)
    dev, inputs = _Sm90Recorder(), _Inputs(p)
    with loader.use_backend(dev):
        launch = _REGISTRY["cuda.13_wgmma_tma"].prepare(p, inputs, {"split_k": split_k} if split_k else {})
        launch()
    gemm = next(l for l in dev.launches if not l[0].startswith(("prepare", "splitk")))
    splits, kps = gemm[1][1], gemm[3][10]
    if want_splits is None:
        assert splits > 8, splits
    else:
        assert splits == want_splits
    ktiles = -(-K // 32)
    assert splits * kps >= ktiles and (splits - 1) * kps < ktiles        # every K tile once, none empty
    assert launch.config["split_k"] == splits
    if splits == 1:
        assert gemm[3][11] == 0 and dev.launches[-1] is gemm and launch.config["reduction"].startswith("none")
        return
    partials = gemm[3][11]
    assert partials.n == splits * M * N and partials is not inputs.bufs["C"]
    red = dev.launches[-1]
    assert red[0] == "splitk_reduce" and red[3] == (M * N, splits, 0.5, partials, 2.0, inputs.bufs["C"])
    assert red[1][0] * red[2][0] >= min(M * N, 16 * 132 * 256)      # grid-stride loop covers C
    assert "split order" in launch.config["reduction"]


@needs_nvcc
def test_tf32x3_issues_three_mma_per_product_of_tf32s_one(tmp_path):
    """The emulator can't run stage 12 (warp-collective mma), so its 3xTF32 is checked in the
    compiled PTX: on one tile, the tf32x3 build has exactly 3x the tf32 build's mma.sync (big*big,
    big*small, small*big; a dropped term gives 2x and TF32-class error under the tf32x3 label)."""
    spec = next(s for s in registry.SPECS if s.stage == "tf32_mma")
    counts = {}
    for label in ("128x128x32w8.vec", "128x128x32w8.vec.x3"):
        cfg = next(c for c in spec.configs if c.label == label)
        text = _ptx(tmp_path, spec, cfg, "sm_80")
        counts[label] = text.count("mma.sync.aligned.m16n8k8")
    assert counts["128x128x32w8.vec"] > 0 and counts["128x128x32w8.vec.x3"] == 3 * counts["128x128x32w8.vec"], counts


def test_wgmma_register_path_tile_pads_few_rows_and_keeps_256_where_m_fills_it():
    """The register-operand path's tile rule (the split-K model over REGB_TILES): a long M keeps
    the 256-row tile (fewest fragment loads per multiply-add); a short M takes a tile that pads
    fewer rows (M = 43: 64 rows pad 21 where 256 would pad 213); tf32x3 never takes 256 rows (its
    temporary would not fit beside 128 accumulators)."""
    from cuda_kernels.heuristics import regb_tile
    assert regb_tile(8192, 8192, 8192, 132, "tf32")[0] == 256
    assert regb_tile(43, 15360, 5120, 132, "tf32")[0] == 64
    # The 64-row tile at its measured tf32 speed (0.6 of 256 rows, not the guessed 0.75): two tuning
    # shapes it lost on take 128 rows (1.12x each, results/h100/tensor-core/regb-tiles/); the first
    # as it would be with TMA-readable rows of B (N = 3576, not 3575: see the next test).
    assert regb_tile(251, 3576, 6545, 132, "tf32")[0] == 128 and regb_tile(2574, 132, 1765, 132, "tf32")[0] == 128
    assert regb_tile(43, 15360, 5120, 132, "tf32x3")[0] == 64
    for shape in [(8192, 8192, 8192), (300, 4096, 4096), (1, 4096, 4096), (5000, 5000, 100)]:
        assert regb_tile(*shape, 132, "tf32x3")[0] in (128, 64)


def test_wgmma_tile_rule_counts_how_a_tile_reads_b():
    """Where N % 4 != 0, a tile with more than one row of tiles over M pads B's rows by a copy (one
    read, one write of K x N floats) and a single row of tiles reads B as stored by cp.async, whose
    main loop runs at REGB_CP_ASYNC_SPEED of TMA's. The rule counts both, so M just past 128 with a
    long K takes the 256-row tile (138x8154x3680: 1.89x the 128-row tile's speed on the H100,
    results/h100/tensor-core/regb-tiles/), and a short K keeps the copy (230x326x3059: the 256-row
    tile ran 0.83x, results/h200/tensor-core/tile-b-load/)."""
    from cuda_kernels.heuristics import REGB_CP_ASYNC_SPEED, regb_b_load_cost, regb_tile
    # By hand: 2 passes x 4 bytes x 3680 x 8154 at 2.5 TB/s = 96.0 us, plus a 4 us launch.
    before, speed = regb_b_load_cost(138, 8154, 3680, 128)
    assert abs(before - (2 * 4 * 3680 * 8154 / 2.5e12 + 4e-6)) < 1e-12 and abs(before - 100.0e-6) < 0.1e-6
    assert speed == 1.0
    assert regb_b_load_cost(138, 8154, 3680, 256) == (0.0, REGB_CP_ASYNC_SPEED) == (0.0, 0.7)   # one row of tiles
    assert regb_b_load_cost(138, 8156, 3680, 128) == (0.0, 1.0)   # N % 4 == 0: TMA reads B
    assert regb_b_load_cost(138, 8154, 3680, 128, "cp_async") == (0.0, 0.7)
    assert regb_b_load_cost(100, 127, 3680, 64) == (0.0, 1.0)     # N <= 128: one bulk copy per K tile
    assert regb_tile(138, 8154, 3680, 132, "tf32")[0] == 256
    assert regb_tile(138, 8156, 3680, 132, "tf32")[0] == 128   # aligned: no copy to count
    assert regb_tile(230, 326, 3059, 132, "tf32")[0] != 256    # the copy costs less than the slower loop
    # b_unaligned=pad forced (or B at an unaligned address): every tile pays the copy, the pick is
    # the split-K model's alone.
    assert regb_tile(138, 8154, 3680, 132, "tf32", b_unaligned="pad")[0] == 128


@pytest.mark.parametrize("options, want", [
    ({}, ["256x128x32s4.regb.cpasync", "splitk_reduce"]),
    ({"b_unaligned": "pad"}, ["pad_rows", "128x128x32s6.regb"]),
])
def test_wgmma_launch_picks_the_tile_by_how_it_reads_b(monkeypatch, options, want):
    """The launch's tile rule sees the b_unaligned option: at 138x8154x3680 (N % 4 != 0) the default
    takes 256 rows and reads B as stored (no copy); with the copy forced every tile pays it, and the
    split-K model's 128 rows win."""
    from cuda_kernels import tma
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    p = Problem(138, 8154, 3680, precision="tf32")
    dev = _Sm90Recorder()
    with loader.use_backend(dev):
        _REGISTRY["cuda.13_wgmma_tma"].prepare(p, _Inputs(p), dict(options))()
    assert [l[0] for l in dev.launches] == want


def test_wgmma_tile_option_refuses_a_tile_of_another_path(monkeypatch):
    from cuda_kernels import tma
    from compare.harness.errors import UsageError
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    k = _REGISTRY["cuda.13_wgmma_tma"]
    with loader.use_backend(_Sm90Recorder()):
        p = Problem(256, 256, 256, precision="tf32x3")
        with pytest.raises(UsageError, match="not a tf32x3 tile of the register-operand path"):
            k.prepare(p, _Inputs(p), {"tile": "256x128x32s4.regb"})
        p = Problem(256, 255, 256, precision="tf32")
        with pytest.raises(UsageError, match="copy path of tf32 has the one tile 128x256x32s4"):
            k.prepare(p, _Inputs(p), {"tile": "64x128x32s8.regb", "b_transpose": "copy"})
        with pytest.raises(UsageError, match="b_unaligned=pad is an option of the swap path"):
            k.prepare(p, _Inputs(p), {"b_unaligned": "pad", "b_transpose": "copy"})
        # The cp.async build is chosen by B's rows, not named as a tile.
        with pytest.raises(UsageError, match="not a tf32 tile of the register-operand path"):
            k.prepare(p, _Inputs(p), {"tile": "64x128x32s8.regb.cpasync"})


def test_wgmma_cp_async_build_needs_an_aligned_b(monkeypatch):
    """The cp.async build copies B's rows in 16-byte chunks from B's own address: B 4 bytes past a
    16-byte boundary takes the padded copy instead (N % 4 != 0), and an aligned B the cp.async build."""
    from cuda_kernels import tma
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    k = _REGISTRY["cuda.13_wgmma_tma"]
    p = Problem(300, 261, 1001, precision="tf32")
    for shift, want in ((0, "64x128x32s8.regb.cpasync"), (4, "pad_rows")):
        dev, inputs = _Sm90Recorder(), _Inputs(p)
        inputs.bufs["B"].addr += shift
        with loader.use_backend(dev):
            k.prepare(p, inputs, {"tile": "64x128x32s8.regb", "split_k": 1, "b_unaligned": "cp_async"})()
        assert want in [l[0] for l in dev.launches], dev.launches


def test_wgmma_b_unaligned_default_loads_b_in_the_gemm_only_where_it_is_read_once():
    """bulk wherever N <= 128 (one column tile: a K tile of B is one contiguous run); above it
    cp_async where one row of TM-row tiles covers M (the GEMM reads B once) and N >= 32; pad (a
    copy, then TMA) where B is read again per row of tiles or has a few columns."""
    from cuda_kernels.heuristics import regb_b_unaligned
    assert regb_b_unaligned(60, 45, 64) == "bulk" and regb_b_unaligned(65, 45, 64) == "bulk"
    assert regb_b_unaligned(1, 3, 64) == "bulk" and regb_b_unaligned(100_000, 127, 256) == "bulk"
    assert regb_b_unaligned(64, 129, 64) == "cp_async"   # N = 129: two column tiles
    assert regb_b_unaligned(64, 4097, 64) == "cp_async" and regb_b_unaligned(256, 133, 256) == "cp_async"
    assert regb_b_unaligned(65, 4097, 64) == "pad"        # two rows of 64-row tiles
    assert regb_b_unaligned(300, 131, 256) == "pad" and regb_b_unaligned(60, 4097, 32) == "pad"


def test_wgmma_bulk_b_refuses_n_over_128(monkeypatch):
    """b_unaligned=bulk copies whole K rows of B into one 128-column tile: N = 129 is refused in
    words before anything is launched; N = 128 (N % 4 == 0) reads B by TMA as the option says."""
    from cuda_kernels import tma
    from compare.harness.errors import UsageError
    monkeypatch.setattr(tma, "tensor_map", lambda address, rows, cols, ld, box_rows: address)
    k = _REGISTRY["cuda.13_wgmma_tma"]
    dev = _Sm90Recorder()
    with loader.use_backend(dev):
        p = Problem(64, 129, 1000, precision="tf32")
        with pytest.raises(UsageError, match="b_unaligned=bulk .* N <= 128; got N=129"):
            k.prepare(p, _Inputs(p), {"b_unaligned": "bulk"})
        assert dev.launches == []
        p = Problem(64, 128, 1000, precision="tf32")
        k.prepare(p, _Inputs(p), {"b_unaligned": "bulk", "split_k": 1})()
        assert [l[0] for l in dev.launches] == ["64x128x32s8.regb"]


def _copy_mma_runs(ptx: str) -> int:
    """How many times the PTX, in order, switches from a run of cp.async to a run of mma.sync."""
    runs, last = 0, None
    for m in re.finditer(r"\b(cp\.async\.c[ag]\.shared|mma\.sync)", ptx):
        kind = "copy" if m.group(1).startswith("cp") else "mma"
        if last == "copy" and kind == "mma":
            runs += 1
        last = kind
    return runs


@needs_nvcc
def test_tf32_mma_spreads_the_next_tiles_copies_over_the_k8_steps(tmp_path):
    """tf32 issues the next tile's copies a quarter per k8 step, between the steps' mma (COPY_PARTS
    = BK / 8; issued at once they held the first ldmatrix behind them: results/h200/stage12-cutlass/):
    the main loop switches from copies to mma once per k8 step, 4 times for BK = 32, plus the
    prologue's switch; tf32x3 (COPY_PARTS = 1) keeps one switch per tile."""
    spec = next(s for s in registry.SPECS if s.name == "cuda.12_tf32_mma")
    by_label = {c.label: c for c in spec.configs}
    for label in ("128x128x32.vec", "128x128x32.scalar", "128x256x32.vec"):
        assert _copy_mma_runs(_ptx(tmp_path, spec, by_label[label], "sm_90")) >= 4, label
    assert _copy_mma_runs(_ptx(tmp_path, spec, by_label["128x128x32w8.vec.x3"], "sm_90")) <= 2


@needs_nvcc
def test_wgmma_tf32_stores_c_through_shared_memory_and_tf32x3_from_registers(tmp_path):
    """tf32's data-parallel build stages C in shared memory (a barrier over the two consumer
    warpgroups, then 16-byte stores of whole rows: results/h200/tensor-core/epilogue/); tf32x3 keeps
    its 4-byte register stores (the staged epilogue ran it 0.93-0.98x)."""
    spec = next(s for s in registry.SPECS if s.name == "cuda.13_wgmma_tma")
    by_label = {c.label: c for c in spec.configs}
    for label in ("256x128x32s4.regb", "64x128x32s8.regb.bulk"):
        ptx = _ptx(tmp_path, spec, by_label[label], "sm_90a")
        assert "bar.sync 1, 256" in ptx and "st.global.v4.f32" in ptx, label
    for label in ("128x128x32s4.regb.x3", "256x128x32s4.regb.sk"):
        ptx = _ptx(tmp_path, spec, by_label[label], "sm_90a")
        assert "bar.sync 1, 256" not in ptx and "st.global.v4.f32" not in ptx, label
