"""The package's layers, read from its source with ``ast`` (nothing is imported or run).

Every import statement counts: at the top of a module, inside a function, under
``if TYPE_CHECKING:``. A statement imports the most specific module of the package it names:
``import goodput_sim.a.b`` and ``from goodput_sim.a.b import name`` import ``goodput_sim.a.b``
(``goodput_sim.a`` when ``b`` is not a module), ``from goodput_sim.a import b`` imports
``goodput_sim.a.b`` when ``b`` is a module and ``goodput_sim.a`` otherwise; relative imports are
resolved from the importing module's package. For cycles only, a package's ``__init__``
importing its own submodules is not an edge: that is how a package shows its face.
"""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "goodput_sim"
MAX_CLASS_LINES = 400


def modules_of(root: Path) -> dict[str, Path]:
    """Every module below the package folder ``root`` by dotted name (a package by its own name,
    for its ``__init__.py``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of the dotted ``name`` that is a module of the package, if any."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        candidate = ".".join(parts[:k])
        if candidate in modules:
            return candidate
    return None


def imports_of(name: str, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports, in any import statement."""
    path = modules[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    named = []  # the most specific module each statement names, or a name outside the package
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                member = f"{source}.{alias.name}"
                named.append(member if member in modules else source)
    found = {_known(n, modules) for n in named}
    return {m for m in found if m is not None and m != name}


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (every edge, ``__init__`` ones included)."""
    modules = modules_of(root)
    return {name: imports_of(name, modules) for name in modules}


def cycle_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` without the edges from a package to its own submodules."""
    return {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in graph.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each set of modules that import one another in a circle (the strongly connected
    components of more than one module, Tarjan's algorithm without recursion), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


@functools.cache
def _graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE)


def _under(module: str, *packages: str) -> bool:
    """Whether ``module`` is one of ``packages`` or inside one of them."""
    return any(module == p or module.startswith(p + ".") for p in packages)


def _imports_from(sources: tuple[str, ...], forbidden) -> list[str]:
    """``a imports b`` for every module ``a`` in ``sources`` that imports a ``forbidden`` one."""
    missing = [s for s in sources if not any(_under(m, s) for m in _graph())]
    assert not missing, f"no such module or package (renamed?): {missing}"
    return [
        f"{module} imports {target}"
        for module, targets in sorted(_graph().items())
        if _under(module, *sources)
        for target in sorted(targets)
        if forbidden(target)
    ]


# ---------------------------------------------------------------------------- the checks


def test_no_import_cycles():
    """Modules that import one another can be understood, tested and changed only together, and
    which of them Python runs first decides what works: every import points one way."""
    cycles = import_cycles(cycle_graph(_graph()))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_inputs_and_results_import_no_engine_policy_or_command():
    """Readers of input files and of saved results must work without the simulator: a results
    folder is read back, reported and replotted by code that cannot change how runs behave, and
    the engine, its policies and batch agents can be rewritten without touching them."""
    bad = _imports_from(
        ("goodput_sim.inputs", "goodput_sim.results"),
        lambda target: (
            target in ("goodput_sim.engine", "goodput_sim.api")
            or _under(
                target,
                "goodput_sim.sim",
                "goodput_sim.policies",
                "goodput_sim.agents",
                "goodput_sim.experiments",
                "goodput_sim.cli",
            )
        ),
    )
    assert not bad, "\n".join(bad)


def test_models_import_only_models_and_errors():
    """The models are the paper's arithmetic (throughput, efficiency, goodput, schedules): pure
    functions of numbers that the profiles, policies and engine build on, never the reverse.
    The compiled fit may also ask where numba caches, and the Sia artifact's fit which BLAS
    kernel runs (``numba_cache`` and ``blas_kernel`` import nothing of the package)."""
    leaves = {"goodput_sim.errors", "goodput_sim.numba_cache", "goodput_sim.blas_kernel"}
    bad = _imports_from(
        ("goodput_sim.models",),
        lambda target: not _under(target, "goodput_sim.models") and target not in leaves,
    )
    assert not bad, "\n".join(bad)


def test_the_spec_imports_no_engine():
    """The run specification (settings, their checks, the run key) is read by the CLI, sweeps
    and results alike; it describes a run and must not need the engine that executes one."""
    bad = _imports_from(
        ("goodput_sim.spec",),
        lambda target: _under(target, "goodput_sim.engine", "goodput_sim.sim"),
    )
    assert not bad, "\n".join(bad)


def test_the_engine_parts_see_policies_only_through_their_interface():
    """The engine's parts talk to a policy only through ``policies.base`` (the views and
    decisions every policy shares); reaching into one policy's module ties the engine to it."""
    bad = _imports_from(
        ("goodput_sim.sim",),
        lambda target: (
            _under(target, "goodput_sim.policies") and target != "goodput_sim.policies.base"
        ),
    )
    assert not bad, "\n".join(bad)


def test_no_class_is_longer_than_400_lines():
    """A class longer than a few hundred lines holds several jobs at once; each should be its own
    class or module, small enough to read whole."""
    lengths = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                where = f"{path.relative_to(PACKAGE.parent)}:{node.name}"
                lengths.append((node.end_lineno - node.lineno + 1, where))
    longest = max(lengths)
    assert longest[0] <= MAX_CLASS_LINES, f"{longest[1]} is {longest[0]} lines"


# ---------------------------------------------------------------------- the checks' checks


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_the_cycle_finder_finds_a_cycle(tmp_path):
    """The check can fail: two modules of a small package that import each other, one of them
    only inside a function under TYPE_CHECKING, make a cycle; a package's face importing its
    own submodule does not, nor a module importing the package that contains it."""
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg import a\n",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": (
                "from typing import TYPE_CHECKING\n"
                "def f():\n"
                "    if TYPE_CHECKING:\n"
                "        from .a import thing\n"
            ),
            "pkg/c.py": "import pkg.a\nimport os\n",
            "pkg/sub/__init__.py": "from . import d\n",
            "pkg/sub/d.py": "from .. import c\nfrom pkg.sub import e\n",
            "pkg/sub/e.py": "import pkg.sub\nfrom ..c import name\n",
        },
    )
    graph = import_graph(root)
    assert graph == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.a"},
        "pkg.c": {"pkg.a"},
        "pkg.sub": {"pkg.sub.d"},
        "pkg.sub.d": {"pkg.c", "pkg.sub.e"},
        "pkg.sub.e": {"pkg.sub", "pkg.c"},
    }
    assert import_cycles(cycle_graph(graph)) == [["pkg.a", "pkg.b"]]
    # Without the package's own exception, pkg.sub <-> pkg.sub.d <-> pkg.sub.e is one too.
    assert import_cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.sub", "pkg.sub.d", "pkg.sub.e"]]


def test_the_cycle_finder_passes_a_package_without_cycles(tmp_path):
    """A chain of imports, however long, is no cycle."""
    files = {"pkg/__init__.py": ""}
    files |= {f"pkg/m{k}.py": f"from pkg import m{k + 1}\n" for k in range(50)}
    files["pkg/m50.py"] = ""
    assert import_cycles(cycle_graph(import_graph(_write(tmp_path, files)))) == []


def test_the_architecture_page_names_every_package_module_and_dynamic():
    """``docs/architecture.md`` lists each package, each module of ``sim/`` and each registered
    dynamic with its module: a part added without a line there makes this fail."""
    from goodput_sim.sim.dynamics import DYNAMICS

    page = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    packages = [p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()]
    missing = [f"{name}/" for name in packages if f"`{name}/`" not in page]
    sim = [p.name for p in (PACKAGE / "sim").glob("*.py") if p.name != "__init__.py"]
    missing += [name for name in sim if f"`{name}`" not in page]
    for name, factory in DYNAMICS.items():
        module = f"`{Path(inspect.getfile(factory)).name}`"
        if f"`{name}`" not in page or module not in page:
            missing.append(f"{name} ({module})")
    assert not missing, f"docs/architecture.md does not mention: {', '.join(missing)}"
