"""The package's imports point one way (issue #21, DESIGN.md "Layers, one direction").

The imports of every module of ``jitterlab`` are read with :mod:`ast` (function-level
imports included: a lazy import is still a dependency) and checked for

* **import circles**: strongly connected groups of modules (a package counts as its
  ``__init__``), and
* **private names crossing modules**: ``from .x import _name`` where ``_name`` is not a
  module: a private name used elsewhere is a public concept without a home.

Both are compared with the lists of what is known today (``KNOWN_CIRCLES``,
``KNOWN_PRIVATE``), which issue #21 empties: a new circle or crossing fails with the
offending pair, and so does a known one that has gone (remove it from the list).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jitterlab"

#: the layers, bottom first: a module may import its own layer and the ones below it
#: (``jitterlab`` itself and the modules at the top of the package form the last layer)
LAYERS: tuple[str, ...] = (
    "jitterlab.base", "jitterlab.traces", "jitterlab.noise", "jitterlab.io", "jitterlab.sim",
    "jitterlab.analytic", "jitterlab.measure", "jitterlab.apps", "jitterlab.compare",
)

#: imports that point upward today, each with its reason; issue #21 empties this too
KNOWN_UPWARD: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def resolve(importer: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module name of a (possibly relative) import in ``importer``."""
    if level == 0:
        return target or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _runtime_nodes(tree):
    """Every node except those under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.If) and isinstance(child.test, ast.Name)
                    and child.test.id == "TYPE_CHECKING"):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def imports(known: dict[str, Path]):
    """(importer, imported module, name or None) for every import inside the package."""
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _runtime_nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "jitterlab" or alias.name.startswith("jitterlab."):
                        yield name, alias.name, None
            elif isinstance(node, ast.ImportFrom):
                source = resolve(name, is_package, node.level, node.module)
                if source != "jitterlab" and not source.startswith("jitterlab."):
                    continue
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    if submodule in known:
                        yield name, submodule, None
                    else:
                        yield name, source, alias.name


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    for importer, source, _ in imports(known):
        # importing a.b.c runs a and a.b first; a package's own __init__ is not an edge
        target = source
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        # a module's own packages are imported before it anyway (``from .. import x``)
        if target in known and target != importer and not importer.startswith(target + "."):
            edges[importer].add(target)
    return edges


def circles(edges: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), set()
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.add(tuple(sorted(group)))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def private_crossings() -> set[tuple[str, str, str]]:
    known = modules()
    return {(importer, source, name) for importer, source, name in imports(known)
            if name is not None and name.startswith("_") and not name.startswith("__")
            and source != importer}


def layer(module: str) -> int:
    """Index of the layer of ``module`` in :data:`LAYERS` (the top: ``len(LAYERS)``)."""
    for index, package in enumerate(LAYERS):
        if module == package or module.startswith(package + "."):
            return index
    return len(LAYERS)


def upward_imports(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    return {(importer, target) for importer, targets in edges.items() for target in targets
            if layer(target) > layer(importer)}


def test_no_import_circles():
    found = sorted(circles(graph()))
    assert not found, f"import circle(s), each a group of modules that import each other: {found}"


def test_private_names_stay_in_their_module():
    found = sorted(private_crossings())
    assert not found, ("private name(s) imported across modules (importer, source, name): "
                       f"{found}")


def test_dependencies_point_down_the_layers():
    now = upward_imports(graph())
    new = sorted(now - KNOWN_UPWARD)
    gone = sorted(KNOWN_UPWARD - now)
    assert not new, f"import(s) from a higher layer (importer, imported): {new}"
    assert not gone, f"no longer imported upward, remove from KNOWN_UPWARD: {gone}"


def test_the_checker_finds_a_circle_a_crossing_and_an_upward_import():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == {("a", "b", "c")}
    assert resolve("jitterlab.apps.wavefront", False, 2, "simulate") == "jitterlab.simulate"
    assert resolve("jitterlab.io", True, 1, "native") == "jitterlab.io.native"
    assert resolve("jitterlab.io", True, 2, None) == "jitterlab"
    assert upward_imports({"jitterlab.base.checks": {"jitterlab.sim.simulate"},
                           "jitterlab.sim.simulate": {"jitterlab.base.checks"}}) == \
        {("jitterlab.base.checks", "jitterlab.sim.simulate")}
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n")
    assert not any(isinstance(node, ast.Import) for node in _runtime_nodes(tree))


# --------------------------------------------------------------------------------------
# the public names and the old module paths (issue #21: a move, not a rewrite)
# --------------------------------------------------------------------------------------
def test_every_public_name_resolves():
    import jitterlab as jl

    for name in jl.__all__:
        assert getattr(jl, name) is not None, name


def test_old_module_paths_give_the_module_at_its_new_home():
    import importlib
    import sys

    from jitterlab import old_paths

    for old, new in old_paths.OLD_PATHS.items():
        module = importlib.import_module(old)
        assert module is importlib.import_module(new), old
        assert module.__name__ == new and module.__spec__.name == new, old
        assert sys.modules[old] is sys.modules[new]
    # a submodule of an old package path is the same module too, not a second copy
    assert importlib.import_module("jitterlab.bench.latency") is \
        importlib.import_module("jitterlab.measure.latency")
    assert old_paths.new_path("jitterlab.schedules.generators") == \
        "jitterlab.sim.schedules.generators"
    assert old_paths.new_path("jitterlab.plotting") is None


def test_a_submodule_import_does_not_replace_a_public_function():
    import importlib

    import jitterlab as jl

    importlib.import_module("jitterlab.simulate")  # the old path of jitterlab.sim.simulate
    importlib.import_module("jitterlab.sweep")
    importlib.import_module("jitterlab.explore")
    assert callable(jl.simulate) and jl.simulate.__module__ == "jitterlab.sim.simulate"
    assert callable(jl.sweep) and callable(jl.explore)
    from jitterlab.simulate import TreeBarrier
    assert TreeBarrier is jl.TreeBarrier


def test_import_jitterlab_loads_no_numerical_library():
    import subprocess
    import sys

    code = ("import sys, jitterlab; heavy = [m for m in ('numpy', 'pandas', 'scipy', 'numba', "
            "'xarray', 'matplotlib', 'dask') if m in sys.modules]; print(','.join(heavy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "", f"import jitterlab loaded {done.stdout.strip()}"


def test_the_package_pickles_by_name_as_modules_do():
    import pickle

    import cloudpickle

    import jitterlab as jl

    assert pickle.loads(pickle.dumps(jl)) is jl

    def uses_the_package(n):  # defined here: cloudpickle sends it by value, with jl
        return jl.tree_depth(n)

    assert cloudpickle.loads(cloudpickle.dumps(uses_the_package))(7) == 2
