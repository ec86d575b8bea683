"""The docs and the CI script tell the truth about the repository.

* Every file the docs cite exists: markdown links, backticked paths, and file names in the
  prose (README.md, docs/*.md, cuda_kernels/README.md). Commands, globs and placeholders are
  not paths and are left alone; inside a multi-word code span only words that start with one of
  the repository's top-level folders are checked (`bash .ci/run`, `--from-json results/...`).
* The README's install line names extras that pyproject.toml declares, and they bring what the
  README's test command needs; CPU CI tests the lower bound of the declared Triton range.
* GEMM_LADDER_NO_SKIPS=1 (set by CI) turns a skip into a failure (tests/conftest.py).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

FILE_EXT = r"(?:md|py|cu|cuh|hpp|json|png|svg|txt|log|toml|yml|yaml|sh|csv|cfg|ini)"
# A path-like word in prose: optional folders, a name, a known extension; or folders ending in /.
_PROSE_PATH = re.compile(
    rf"(?<![\w/.:-])((?:\.{{0,2}}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.{FILE_EXT}(?:\.gz)?|(?:[\w.-]+/)+)(?![\w/-])")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"`([^`]+)`")  # a span may wrap onto the next line
# Written at run time, never committed (.gitignore): a doc may name them without them existing.
GENERATED = (".asv/", ".ci-venvs/", "build/", ".cache/", ".whl/")  # made on the user's machine
_NOT_A_PATH = re.compile(r"[*?<>{}\[\]$|=~@%,;:'\"()]")  # globs, placeholders, URLs, options


def doc_files() -> list[str]:
    docs = os.path.join(REPO, "docs")
    files = ["README.md", os.path.join("cuda_kernels", "README.md")]
    files += sorted(os.path.join("docs", f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def _top_level() -> set[str]:
    return {e for e in os.listdir(REPO) if e not in (".git",)}


def _tracked_basenames() -> dict[str, list[str]]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    names: dict[str, list[str]] = {}
    paths = out.stdout.split() if out.returncode == 0 else []
    if not paths:  # not a git checkout: walk the tree
        for root, dirs, files in os.walk(REPO):
            dirs[:] = [d for d in dirs if not d.startswith(".git")]
            paths += [os.path.relpath(os.path.join(root, f), REPO) for f in files]
    for p in paths:
        names.setdefault(os.path.basename(p), []).append(p)
    return names


def _looks_like_path(word: str) -> bool:
    if not word or _NOT_A_PATH.search(word) or word.startswith("-") or "://" in word:
        return False
    return "/" in word or re.fullmatch(rf"[\w.-]+\.{FILE_EXT}(?:\.gz)?", word) is not None


def cited_paths(text: str) -> list[tuple[str, str]]:
    """(kind, path) for every file reference in a markdown text."""
    refs: list[tuple[str, str]] = []
    top = _top_level()

    def from_code(code: str) -> None:
        words = code.split()
        if len(words) == 1:
            if _looks_like_path(words[0]):
                refs.append(("code", words[0]))
            return
        for w in words:  # a command line: only words that start in a top-level folder
            w = w.rstrip(".,;")
            if _looks_like_path(w) and w.split("/", 1)[0] in top and "/" in w:
                refs.append(("command", w))

    for m in _FENCE.finditer(text):
        for line in m.group(0).splitlines()[1:-1]:
            from_code(line.split(" #", 1)[0])
    prose = _FENCE.sub("", text)
    for m in _LINK.finditer(prose):
        target = m.group(1).split("#", 1)[0]
        if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target):
            refs.append(("link", target))
    prose = _LINK.sub(" ", prose)
    for m in _CODE_SPAN.finditer(prose):
        from_code(m.group(1))
    prose = _CODE_SPAN.sub(" ", prose)
    for m in _PROSE_PATH.finditer(prose):
        word = m.group(1)
        if _looks_like_path(word) and not re.fullmatch(r"(?:\d+/)+", word):
            refs.append(("text", word))
    return refs


def missing_paths(doc: str, text: str) -> list[str]:
    base = os.path.dirname(os.path.join(REPO, doc))
    by_name = _tracked_basenames()
    bad = []
    for kind, ref in cited_paths(text):
        path = ref.split("#", 1)[0]
        if path.startswith("/") or path.startswith(GENERATED) or path.rstrip("/") + "/" in GENERATED:
            continue  # an absolute path is the user's machine, not the repository
        candidates = [os.path.normpath(os.path.join(base, path)), os.path.normpath(os.path.join(REPO, path))]
        inside = [c for c in candidates if c == REPO or c.startswith(REPO + os.sep)]
        if any(os.path.exists(c) for c in inside):
            continue
        if "/" not in path.rstrip("/") and kind in ("text", "code") and path in by_name:
            continue  # a bare file name of a tracked file (e.g. "registry.py" next to its folder's name)
        bad.append(f"{doc}: {kind} reference {ref!r} does not exist")
    return bad


@pytest.mark.parametrize("doc", doc_files())
def test_every_cited_file_exists(doc):
    with open(os.path.join(REPO, doc), encoding="utf-8") as fh:
        text = fh.read()
    assert cited_paths(text), f"{doc}: the checker found no file references at all (parser broken?)"
    bad = missing_paths(doc, text)
    assert not bad, "\n".join(bad)


def test_the_checker_catches_what_it_should_and_leaves_commands_alone():
    text = textwrap.dedent("""\
        See [design](docs/design.md) and [gone](docs/gone.md), `compare/harness/check.py`, `compare/nope.py`,
        the worklog's numbers (ANCHORS.md), `make_fixture.py`, results/h200/long_k.md, ../shared/DESIGN.md,
        `python -m cuda_kernels.sweep
        -o out.json` and `.asv/results`, `/tmp/site`.
        ```bash
        bash .ci/run                  # comment with fake/path.py
        bash .ci/missing results/<name> --plot out.png
        ```
        Commands: `python -m compare --plot out.png`, `pip install -e ".[cuda12,dev]"`, `tests/*.py`,
        `--from-json FILE`, https://example.com/a.md, e.g. 3.6.0 and torch 2.13.0+cpu, `asv run`.
        """)
    bad = missing_paths("README.md", text)
    want = ["docs/gone.md", "compare/nope.py", "ANCHORS.md", "make_fixture.py", ".ci/missing",
            "../shared/DESIGN.md"]
    assert sorted(re.search(r"'([^']+)'", b).group(1) for b in bad) == sorted(want), bad


def _pyproject() -> dict:
    if tomllib is None:
        pytest.skip("tomllib needs Python >= 3.11")
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as fh:
        return tomllib.load(fh)


def _readme_section(title: str) -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.M | re.S)
    assert m, f"README.md has no section '## {title}'"
    return m.group(1)


def test_readme_install_line_brings_what_the_tests_need():
    extras = _pyproject()["project"]["optional-dependencies"]
    setup = _readme_section("Set up and run")
    m = re.search(r'pip install -e "\.\[([\w,-]+)\]"', setup)
    assert m, "the README's first install command is not pip install -e \".[...]\""
    chosen = m.group(1).split(",")
    assert all(e in extras for e in chosen), f"README installs extras {chosen}; pyproject has {sorted(extras)}"
    brought = {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower() for e in chosen for req in extras[e]}
    # pytest runs the tests, matplotlib draws test_plot_from_recorded_json's plot, asv runs the
    # asv tests: none of them may be missing after the README's install.
    # dask: the distributed-sweep tests (tests/test_distributed.py) run in CI from the same line.
    assert {"pytest", "matplotlib", "asv", "asv-runner", "dask"} <= brought, brought
    assert "python -m pytest -q" in _readme_section("Tests")


def test_ci_tests_the_lower_bound_of_the_triton_range():
    deps = _pyproject()["project"]["dependencies"]
    triton = [d for d in deps if re.match(r"triton\b", d)]
    assert len(triton) == 1, deps
    low = re.search(r">=\s*([\d.]+)", triton[0])
    high = re.search(r"<\s*([\d.]+)", triton[0])
    assert low and high, f"{triton[0]}: declare the tested range, both ends"
    with open(os.path.join(REPO, ".ci", "run"), encoding="utf-8") as fh:
        ci = fh.read()
    oldest = re.search(r"^TRITON_OLDEST=([\d.]+)$", ci, re.M)
    assert oldest, ".ci/run must pin an env to the oldest supported triton"
    assert oldest.group(1).split(".")[:2] == low.group(1).split(".")[:2], (oldest.group(1), triton[0])


def test_no_skips_mode_turns_a_skip_into_a_failure(tmp_path):
    """What keeps CI from passing by skipping a test whose tool is missing."""
    (tmp_path / "conftest.py").write_text(open(os.path.join(REPO, "tests", "conftest.py"), encoding="utf-8").read())
    (tmp_path / "test_x.py").write_text(textwrap.dedent("""\
        import pytest
        def test_runs(): pass
        def test_needs_a_tool(): pytest.skip("no frobnicator")
        @pytest.mark.gpu
        def test_gpu(): pass
        """))
    (tmp_path / "test_mod.py").write_text("import pytest\npytest.skip('no module tool', allow_module_level=True)\n")
    (tmp_path / "test_gpu_mod.py").write_text(textwrap.dedent("""\
        import pytest, torch
        pytestmark = pytest.mark.gpu
        if not torch.cuda.is_available():
            pytest.skip("needs an NVIDIA GPU", allow_module_level=True)
        """))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: gpu\n")

    def run(no_skips: str):
        env = dict(os.environ, GEMM_LADDER_NO_SKIPS=no_skips)
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                               "--continue-on-collection-errors", str(tmp_path)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    relaxed = run("0")
    assert relaxed.returncode == 0, relaxed.stdout
    strict = run("1")
    assert strict.returncode == 1, strict.stdout
    assert "FAILED test_x.py::test_needs_a_tool" in strict.stdout, strict.stdout
    assert "ERROR test_mod.py" in strict.stdout and "no module tool" in strict.stdout, strict.stdout
    assert "PASSED test_x.py::test_runs" in strict.stdout
    # a gpu-marked test is never turned into a failure: it passes (GPU box) or skips (none)
    assert "FAILED test_x.py::test_gpu" not in strict.stdout
    assert "ERROR test_gpu_mod.py" not in strict.stdout  # a gpu module skipping itself is fine


def test_readme_first_screen_gets_a_user_to_a_working_command():
    """The front door: at most ~120 lines, and the first 40 hold the install, the main command, the
    CPU (interpreter) command, a sample of what the main command prints and the test command."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert len(lines) <= 120, len(lines)
    first = "\n".join(lines[:40])
    for needed in ('pip install -e ".[', "python -m compare --stage split_k", "python -m compare --interpret",
                   "summary: % of cuBLAS", "python -m pytest -q"):
        assert needed in first, needed


# docs/design.md's module lists, one per folder: "(`FOLDER/`[, words]: name, name, ...)" ending at
# ";" or ")". Python modules by name without .py; headers (.cuh) with their extension.
DESIGN_FOLDERS = {"compare/harness": (".py",), "compare/families": (".py",), "compare/outputs": (".py",),
                  "compare/ci": (".py",), "cuda_kernels": (".py", ".cuh"), "triton_kernels": (".py",)}


def design_module_lists(text: str) -> dict[str, list[list[str]]]:
    """{folder: [names of each list of that folder in the text]}."""
    out: dict[str, list[list[str]]] = {}
    for m in re.finditer(r"\(`([\w/]+)/`(?:,[^:;)`]*)?: ([^;)]*)[;)]", text):
        names = [n.strip() for n in m.group(2).replace("\n", " ").split(",")]
        out.setdefault(m.group(1), []).append([n for n in names if n])
    return out


def module_list_mismatches(text: str, repo: str) -> list[str]:
    """What docs/design.md's module lists get wrong about the tree at ``repo``, read now."""
    lists = design_module_lists(text)
    bad = []
    for folder, exts in DESIGN_FOLDERS.items():
        if len(lists.get(folder, [])) != 1:
            bad.append(f"docs/design.md: {len(lists.get(folder, []))} module lists for {folder}/ (want exactly one)")
            continue
        doc = lists[folder][0]
        tree = sorted(f[:-3] if f.endswith(".py") else f for f in os.listdir(os.path.join(repo, folder))
                      if f.endswith(exts) and f != "__init__.py")
        for name in sorted(set(tree) - set(doc)):
            bad.append(f"docs/design.md: {folder}/ has {name} but its module list does not name it")
        for name in sorted(set(doc) - set(tree)):
            bad.append(f"docs/design.md: {folder}/'s module list names {name}, which is not in the folder")
        for name in sorted({n for n in doc if doc.count(n) > 1}):
            bad.append(f"docs/design.md: {folder}/'s module list names {name} twice")
    return bad


def test_design_module_lists_match_the_tree():
    """docs/design.md names every module of each layer's folder (and of the two kernel packages),
    and no module that is gone: read from the tree at test time, so a new module fails here until
    its name is in the list."""
    with open(os.path.join(REPO, "docs", "design.md"), encoding="utf-8") as fh:
        text = fh.read()
    bad = module_list_mismatches(text, REPO)
    assert not bad, "\n".join(bad)


def test_the_module_list_check_catches_a_new_and_a_gone_module(tmp_path):
    for folder in DESIGN_FOLDERS:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "compare/harness/runner.py").write_text("")
    (tmp_path / "compare/harness/sol.py").write_text("")         # new, not in the doc
    (tmp_path / "cuda_kernels/common.cuh").write_text("")
    (tmp_path / "cuda_kernels/01_naive.cu").write_text("")       # stage sources: cuda_kernels/README.md's table
    (tmp_path / "triton_kernels/tiled.py").write_text("")
    text = textwrap.dedent("""\
        - **Harness** (`compare/harness/`: runner,
          timing). More prose (with parentheses).
        - (`compare/families/`: ) and (`compare/outputs/`: ) and (`compare/ci/`: )
        - (`cuda_kernels/`: common.cuh; the stages' files elsewhere) and
          (`triton_kernels/`, in the ladder's order: tiled)
        """)
    bad = module_list_mismatches(text, str(tmp_path))
    assert bad == ["docs/design.md: compare/harness/ has sol but its module list does not name it",
                   "docs/design.md: compare/harness/'s module list names timing, which is not in the folder"], bad
    assert module_list_mismatches(text.replace("(`compare/ci/`: )", ""), str(tmp_path))[-1] == \
        "docs/design.md: 0 module lists for compare/ci/ (want exactly one)"


# "docs/findings.md#ANCHOR" in a comment or a doc: the anchor GitHub gives a heading of it.
_FINDINGS_REF = re.compile(r"docs/findings\.md#([\w-]+)")


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = _FENCE.sub("", markdown)
    return {re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            for m in re.finditer(r"^#{1,6} +(.+?) *#*$", text, re.M)}


def findings_refs(root: str) -> list[tuple[str, str]]:
    """(file, anchor) of every docs/findings.md#anchor in the code, the tests and the docs."""
    out = []
    for top in ("compare", "cuda_kernels", "triton_kernels", "benchmarks", "tests", "docs"):
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for f in sorted(files):
                if f.endswith((".py", ".cu", ".cuh", ".md")):
                    path = os.path.join(dirpath, f)
                    with open(path, encoding="utf-8") as fh:
                        out += [(os.path.relpath(path, root), m.group(1)) for m in _FINDINGS_REF.finditer(fh.read())]
    return out


def test_every_findings_anchor_the_code_points_to_is_a_heading():
    with open(os.path.join(REPO, "docs", "findings.md"), encoding="utf-8") as fh:
        anchors = heading_anchors(fh.read())
    refs = findings_refs(REPO)
    assert len(refs) >= 10, refs  # the constants' comments point into docs/findings.md
    bad = [f"{path}: docs/findings.md#{a}" for path, a in refs if a not in anchors and path != "tests/test_docs.py"]
    assert not bad, "no such heading in docs/findings.md:\n" + "\n".join(bad)
    # computed by hand from two headings of the file (GitHub's rule)
    assert "the-swapped-product-b_transposeswap" in anchors   # "The swapped product (b_transpose=swap)"
    assert "stage-11s-tile-h100" in anchors                   # "Stage 11's tile (H100)"
    assert heading_anchors("## A (b=1): x's\n") == {"a-b1-xs"}
