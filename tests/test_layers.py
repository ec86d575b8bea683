"""compare/'s layers, as the folder tree shows them (docs/design.md, Architecture).

    compare/harness/   <- compare/families/ (+ cuda_kernels/, triton_kernels/) <- compare/outputs/
                       <- compare/ci/ <- compare/cli.py, compare/__main__.py (`python -m compare`)

A module may import from its own layer and the layers before it, never from a later one: the
harness imports no family, output, CI tool or the CLI; a family (compare/families/ and the
top-level packages cuda_kernels/, triton_kernels/) no output, CI tool or the CLI; an output no CI
tool or the CLI; a CI tool not the CLI.

How imports are found: every .py of compare/, cuda_kernels/ and triton_kernels/ is parsed with
``ast`` (nothing is imported), and every ``import``/``from ... import`` of those packages,
absolute or relative, is resolved to the module it names (``from ..harness import registry`` is
compare.harness.registry). The layer check counts every import, the ones inside functions too: a
lazy import is as much a dependency as a top-level one. The cycle check counts only module-level
imports (anything outside a ``def``/``lambda``, including ones under ``if``/``try``): those run
while a module is being imported, so a cycle of them can meet a half-initialised module; an import
inside a function runs after every module has loaded. Not seen by either check: modules named in
strings (the registry loads the families with ``importlib.import_module`` from a list of names, by
design, so that the harness imports no family).
"""
from __future__ import annotations

import ast
import os
import textwrap
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAYERS = ("harness", "families", "outputs", "ci", "cli")
RANK = {name: i for i, name in enumerate(LAYERS)}
PACKAGES = ("compare", "cuda_kernels", "triton_kernels")
FAMILY_PACKAGES = ("cuda_kernels", "triton_kernels")


@dataclass(frozen=True)
class Import:
    source: str       # the importing module
    target: str       # the imported module (a package's name when a name is not a module)
    line: int
    module_level: bool

    def __str__(self) -> str:
        where = "module level" if self.module_level else "inside a function"
        return f"{self.source} (line {self.line}, {where}) imports {self.target}"


def modules(root: str) -> dict[str, tuple[str, bool]]:
    """{dotted module name: (path, is_package)} for every .py of PACKAGES under root."""
    out = {}
    for pkg in PACKAGES:
        top = os.path.join(root, pkg)
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                parts = os.path.relpath(os.path.join(dirpath, f), root)[:-3].split(os.sep)
                is_pkg = parts[-1] == "__init__"
                if is_pkg:
                    parts = parts[:-1]
                out[".".join(parts)] = (os.path.join(dirpath, f), is_pkg)
    return out


def layer_of(module: str):
    """The layer a module belongs to, or None for a module of compare/ outside every layer."""
    parts = module.split(".")
    if parts[0] in FAMILY_PACKAGES:
        return "families"
    if len(parts) == 1 or parts[1] in ("cli", "__main__"):
        return "cli"  # the package itself and the entry point: the top
    return parts[1] if parts[1] in LAYERS[:4] else None


def imports(root: str) -> list[Import]:
    """Every import of one of PACKAGES' modules, in every module of PACKAGES under root."""
    mods = modules(root)
    found: list[Import] = []
    for name, (path, is_pkg) in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
        package = name if is_pkg else name.rpartition(".")[0]

        def target(base: str, alias: str) -> str:
            sub = f"{base}.{alias}"
            return sub if sub in mods else base

        def visit(node: ast.AST, module_level: bool) -> None:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in PACKAGES:
                        found.append(Import(name, a.name, node.lineno, module_level))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    up = parts[:len(parts) - (node.level - 1)]
                    assert len(up) >= 1, f"{path}:{node.lineno}: relative import above the package"
                    base = ".".join(up + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base.split(".")[0] in PACKAGES:
                    for a in node.names:
                        found.append(Import(name, target(base, a.name), node.lineno, module_level))
            for child in ast.iter_child_nodes(node):
                inner = module_level and not isinstance(
                    node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                visit(child, inner)

        visit(tree, True)
    return found


def modules_outside_the_layers(root: str) -> list[str]:
    return sorted(m for m in modules(root) if m.split(".")[0] == "compare" and layer_of(m) is None)


def upward_imports(root: str) -> list[str]:
    """Imports from a later layer (lazy ones included), as readable lines."""
    bad = []
    for imp in imports(root):
        src, dst = layer_of(imp.source), layer_of(imp.target)
        if src is None or dst is None:
            continue  # reported by modules_outside_the_layers
        if RANK[dst] > RANK[src]:
            bad.append(f"{imp}: {src} may not import {dst}")
    return bad


def import_cycles(root: str) -> list[list[str]]:
    """Cycles of module-level imports among the modules of PACKAGES (each cycle once)."""
    graph: dict[str, set[str]] = {m: set() for m in modules(root)}
    for imp in imports(root):
        if imp.module_level and imp.target in graph and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    cycles, seen_sets = [], set()
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def dfs(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cyc = path[path.index(n):] + [n]
                key = frozenset(cyc)
                if key not in seen_sets:
                    seen_sets.add(key)
                    cycles.append(cyc)
            elif n not in state:
                dfs(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            dfs(m)
    return cycles


# ----------------------------------------------------------------------------- the repository

def test_every_module_of_compare_is_in_a_layer():
    assert modules_outside_the_layers(REPO) == [], (
        "a module of compare/ outside harness/, families/, outputs/, ci/ (or cli.py, __main__.py): "
        "move it into its layer's folder")


def test_every_layer_folder_is_a_package_that_says_what_it_may_import():
    for layer in LAYERS[:4]:
        init = os.path.join(REPO, "compare", layer, "__init__.py")
        assert os.path.isfile(init), init
        with open(init, encoding="utf-8") as fh:
            doc = ast.get_docstring(ast.parse(fh.read()))
        assert doc and "import" in doc, f"{init}: its docstring says what the layer is and may import"


def test_no_module_imports_from_a_later_layer():
    found = imports(REPO)
    assert any(i.source == "compare.cli" for i in found), "the import finder found nothing (broken?)"
    bad = upward_imports(REPO)
    assert not bad, "\n".join(bad)


def test_no_import_cycle_at_module_level():
    cycles = import_cycles(REPO)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def private_uses(root: str) -> list[str]:
    """``from compare.X import _name`` and ``mod._name`` (``mod`` bound to a compare module by an
    import) in compare/, reproduce/ and benchmarks/: a private helper of compare used outside its
    module. The selection in particular has one public entry (compare/outputs/selection.py select)."""
    paths = [path for path, _ in (v for k, v in modules(root).items() if k.startswith("compare"))]
    for folder in ("reproduce", "benchmarks"):
        top = os.path.join(root, folder)
        if os.path.isdir(top):
            paths += [os.path.join(top, f) for f in sorted(os.listdir(top)) if f.endswith(".py")]
    bad = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
        rel = os.path.relpath(path, root)
        bound = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level or base.split(".")[0] == "compare":
                    bound |= {a.asname or a.name for a in node.names}
                    bad += [f"{rel}:{node.lineno} imports {a.name} from {'.' * node.level}{base}"
                            for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Import):
                bound |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("compare")}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                bad.append(f"{rel}:{node.lineno} uses {node.value.id}.{node.attr}")
    return bad


def test_no_private_helper_of_compare_is_used_outside_its_module():
    bad = private_uses(REPO)
    assert not bad, "make it public where it belongs (or go through selection.select):\n" + "\n".join(bad)


# ------------------------------------------------------------- the checker on a made-up tree

def _tree(tmp_path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_the_checker_catches_an_upward_import_a_cycle_and_a_stray_module(tmp_path):
    root = _tree(tmp_path, {
        "compare/__init__.py": "",
        "compare/cli.py": "from .outputs import report\nfrom .ci import gate\n",
        "compare/stray.py": "",
        "compare/harness/__init__.py": '"""h"""\n',
        "compare/harness/runner.py": "from . import timing\n\ndef f():\n    from ..outputs.report import x\n",
        "compare/harness/timing.py": "from .runner import y\n",
        "compare/harness/problem.py": "def f():\n    from . import check\n",
        "compare/harness/check.py": "from .problem import P\n",
        "compare/families/__init__.py": "",
        "compare/families/cublas.py": "from ..harness.registry import register\nimport compare.ci.gate\n",
        "compare/outputs/__init__.py": "",
        "compare/outputs/report.py": "from ..harness import runner\nfrom compare.families import cublas\n",
        "compare/ci/__init__.py": "",
        "compare/ci/gate.py": "from compare.outputs import report\nfrom ..cli import main\n",
        "cuda_kernels/__init__.py": "from . import registry\n",
        "cuda_kernels/registry.py": "from compare.harness.registry import register\nfrom compare.outputs import report\n",
        "triton_kernels/__init__.py": "",
    })
    assert modules_outside_the_layers(root) == ["compare.stray"]
    bad = upward_imports(root)
    assert sorted(b.split(" (")[0] + " -> " + b.rsplit(" imports ", 1)[1].split(":")[0] for b in bad) == [
        "compare.ci.gate -> compare.cli",
        "compare.families.cublas -> compare.ci.gate",
        "compare.harness.runner -> compare.outputs.report",   # lazy, inside a function: still counted
        "cuda_kernels.registry -> compare.outputs.report",
    ], bad
    # runner <-> timing at module level is a cycle (so are cli <-> ci.gate and the upward chain
    # families.cublas -> ci.gate -> outputs.report -> families.cublas); problem <-> check is not:
    # problem's import is inside a function.
    cycles = [set(c) for c in import_cycles(root)]
    assert {"compare.harness.runner", "compare.harness.timing"} in cycles, cycles
    assert {"compare.ci.gate", "compare.cli"} in cycles, cycles
    assert not any("compare.harness.problem" in c for c in cycles), cycles


def _sets_interpret_at_import(source: str) -> list[int]:
    """Lines of module-level statements (outside ``def``/``class`` and ``if __name__ == ...``)
    that write TRITON_INTERPRET into os.environ."""
    hits = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node):
            writes = (isinstance(sub, ast.Call) and ast.unparse(sub.func) in
                      ("os.environ.setdefault", "os.environ.update", "os.putenv")) or \
                     (isinstance(sub, ast.Assign) and any(isinstance(t, ast.Subscript) and
                                                          ast.unparse(t.value) == "os.environ" for t in sub.targets))
            if writes and "TRITON_INTERPRET" in ast.unparse(sub):
                hits.append(sub.lineno)
                break
    return hits


def test_no_test_module_switches_the_interpreter_on_at_import():
    """Only conftest.py decides TRITON_INTERPRET (on, without a GPU). A test module that sets it
    while pytest collects it switches every later Triton test of the process to the interpreter on
    a GPU box: `pytest -m gpu tests` (.ci/gpu) then failed 349 tests with "TRITON_INTERPRET=1 runs
    kernels on CPU tensors" (tests/test_decompose_plans.py did, until it moved under __main__)."""
    tests = os.path.join(REPO, "tests")
    bad = {}
    for name in sorted(os.listdir(tests)):
        if name.endswith(".py") and name != "conftest.py":
            with open(os.path.join(tests, name), encoding="utf-8") as f:
                lines = _sets_interpret_at_import(f.read())
            if lines:
                bad[name] = lines
    assert not bad, bad
    # The checker sees the pattern it guards against, and not the allowed places.
    assert _sets_interpret_at_import('import os\nos.environ.setdefault("TRITON_INTERPRET", "1")\n') == [2]
    assert _sets_interpret_at_import('import os\nif True:\n    os.environ["TRITON_INTERPRET"] = "1"\n') == [3]
    assert _sets_interpret_at_import('import os\nif os.environ.get("TRITON_INTERPRET") == "1":\n    pass\n') == []
    allowed = ('import os\nif __name__ == "__main__":\n    os.environ["TRITON_INTERPRET"] = "1"\n'
               'def f(m):\n    m.setenv("TRITON_INTERPRET", "1")\n')
    assert _sets_interpret_at_import(allowed) == []
