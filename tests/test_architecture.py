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

#: circles known on 2026-11-25 (sorted module names of each), to be broken by issue #21
KNOWN_CIRCLES: set[tuple[str, ...]] = {
    ('jitterlab.analytic.bounds', 'jitterlab.simulate'),
    ('jitterlab.traces.events', 'jitterlab.io.common', 'jitterlab.io.jitsim',
     'jitterlab.io.loggopsim', 'jitterlab.io.native', 'jitterlab.io.otf2', 'jitterlab.traces.trace'),
}

#: private names imported across modules on 2026-11-25: (importer, source, name)
KNOWN_PRIVATE: set[tuple[str, str, str]] = {
    ('jitterlab.sim.collective_kernels', 'jitterlab.apps.wavefront_kernels', '_CLOCK'),
    ('jitterlab.sim.collective_kernels', 'jitterlab.apps.wavefront_kernels', '_NEXT'),
    ('jitterlab.sim.collective_kernels', 'jitterlab.apps.wavefront_kernels', '_PREV_END'),
    ('jitterlab.sim.collective_kernels', 'jitterlab.apps.wavefront_kernels', '_busy'),
    ('jitterlab.sim.collective_kernels', 'jitterlab.apps.wavefront_kernels', '_quick'),
    ('jitterlab.apps.wavefront_kernels', 'jitterlab.sim.replay_kernels', '_JITTER'),
    ('jitterlab.apps.wavefront_kernels', 'jitterlab.sim.replay_kernels', '_START'),
    ('jitterlab.apps.timewarp', 'jitterlab.simulate', '_as_counts'),
    ('jitterlab.apps.wavefront', 'jitterlab.simulate', '_offsets'),
    ('jitterlab.apps.wavefront', 'jitterlab.simulate', '_trace_table'),
    ('jitterlab.measure.bsp', 'jitterlab.measure._mpi', '_check_handle'),
    ('jitterlab.measure.bsp', 'jitterlab.measure.detour', '_DeferredInterrupt'),
    ('jitterlab.measure.latency', 'jitterlab.measure.detour', '_DeferredInterrupt'),
    ('jitterlab.measure.pb', 'jitterlab.measure.detour', '_DeferredInterrupt'),
    ('jitterlab.measure.pb', 'jitterlab.measure.fwq', '_Quanta'),
    ('jitterlab.measure.pb', 'jitterlab.measure.fwq', '_calibrate'),
    ('jitterlab.measure.pb', 'jitterlab.measure.fwq', '_lcg'),
    ('jitterlab.analytic.bounds', 'jitterlab.sim.collectives', '_RoundCollective'),
    ('jitterlab.analytic.bounds', 'jitterlab.analytic.maxofn', '_as_models'),
    ('jitterlab.analytic.bounds', 'jitterlab.analytic.maxofn', '_as_n'),
    ('jitterlab.analytic.correlated', 'jitterlab.analytic.maxofn', '_log_cdf_of_max'),
    ('jitterlab.simulate', 'jitterlab.sim.collectives', '_RoundCollective'),
    ('jitterlab.compare.validate', 'jitterlab.analytic.bounds', '_depth_term'),
    ('jitterlab.compare.validate', 'jitterlab.analytic.maxofn', '_as_models'),
    ('jitterlab.compare.validate', 'jitterlab.analytic.maxofn', '_as_n'),
    ('jitterlab.compare.validate', 'jitterlab.analytic.maxofn', '_log_cdf_of_max'),
    ('jitterlab.compare.validate', 'jitterlab.analytic.maxofn', '_max_isf'),
    ('jitterlab.compare.validate', 'jitterlab.analytic.maxofn', '_one_minus_cdf_of_max'),
}


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


def imports(known: dict[str, Path]):
    """(importer, imported module, name or None) for every import inside the package."""
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
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


def test_circles_are_only_the_known_ones():
    now = circles(graph())
    new = sorted(now - KNOWN_CIRCLES)
    gone = sorted(KNOWN_CIRCLES - now)
    assert not new, f"new import circle(s): {new}"
    assert not gone, f"circle(s) no longer there, remove them from KNOWN_CIRCLES: {gone}"


def test_private_names_stay_in_their_module():
    now = private_crossings()
    new = sorted(now - KNOWN_PRIVATE)
    gone = sorted(KNOWN_PRIVATE - now)
    assert not new, ("private name(s) imported across modules (importer, source, name): "
                     f"{new}")
    assert not gone, f"no longer imported, remove from KNOWN_PRIVATE: {gone}"


def test_the_checker_finds_a_circle_and_a_crossing(tmp_path):
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == {("a", "b", "c")}
    assert resolve("jitterlab.apps.wavefront", False, 2, "simulate") == "jitterlab.simulate"
    assert resolve("jitterlab.io", True, 1, "native") == "jitterlab.io.native"
    assert resolve("jitterlab.io", True, 2, None) == "jitterlab"
