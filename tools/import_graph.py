"""Print dpconvex's internal import graph and its cycles.

Usage: python tools/import_graph.py [--src src/dpconvex] [--deferred] [--edges]

Reads the source with :mod:`ast` (nothing is imported). An edge A -> B means module A
imports module B (``from .b import x`` and ``from . import b`` both count; a package's
``__init__`` counts as the package). By default only imports at module level count;
``--deferred`` adds the imports inside functions (the ones written to break a circle).
A cycle is a strongly connected component of more than one module (or a module that
imports itself). Exit status 1 when there is a cycle.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(current: str, is_package: bool, level: int, target: str | None) -> str:
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(path: Path, root: Path, deferred: bool) -> list[tuple[str, str]]:
    """(module, name) pairs: ``from m import a`` gives (m, "a"); ``import m`` gives (m, "")."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = module_name(path, root)
    is_package = path.name == "__init__.py"
    nodes = ast.walk(tree) if deferred else _top_level(tree)
    found: list[tuple[str, str]] = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve(name, is_package, node.level, node.module)
            else:
                base = node.module or ""
            found.extend((base, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names)
    return found


def _top_level(tree: ast.Module):
    """Import nodes outside functions (module body, class bodies, if/try blocks)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def build_graph(src: Path, deferred: bool) -> dict[str, set[str]]:
    """Module -> the modules it depends on.

    A name imported from a package whose ``__init__`` re-exports it from a submodule
    counts as an import of that submodule (``from ..accounting import PrivacyAccountant``
    depends on ``accounting.accountants``, not on every module the package loads); a
    package's own ``__init__`` importing its submodules is a re-export, not an edge.
    """
    files = sorted(src.rglob("*.py"))
    modules = {module_name(f, src): f for f in files}
    raw = {mod: imports_of(path, src, deferred=False) for mod, path in modules.items()}
    exports: dict[str, dict[str, str]] = defaultdict(dict)
    for mod, pairs in raw.items():
        if modules[mod].name == "__init__.py":
            for base, name in pairs:
                if base.startswith(mod + ".") and name:
                    exports[mod][name] = f"{base}.{name}" if f"{base}.{name}" in modules else base

    def target(base: str, name: str) -> str | None:
        seen = 0
        while True:
            if name and f"{base}.{name}" in modules:
                return f"{base}.{name}"
            if base in exports and name in exports[base] and seen < 20:
                nxt = exports[base][name]
                if nxt == f"{base}.{name}" or nxt in modules and nxt not in exports:
                    return nxt
                base, seen = nxt, seen + 1
                continue
            return base if base in modules else None

    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        pairs = imports_of(path, src, deferred) if deferred else raw[mod]
        edges = {t for base, name in pairs if (t := target(base, name)) is not None}
        graph[mod] = {t for t in edges if t != mod and not t.startswith(mod + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
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
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(Path(__file__).parents[1] / "src" / "dpconvex"))
    parser.add_argument("--deferred", action="store_true", help="count imports in functions")
    parser.add_argument("--edges", action="store_true", help="print every edge")
    args = parser.parse_args(argv)
    src = Path(args.src).resolve()
    graph = build_graph(src, args.deferred)
    n_edges = sum(len(v) for v in graph.values())
    kind = "module-level and deferred" if args.deferred else "module-level"
    print(f"{len(graph)} modules, {n_edges} internal imports ({kind})")
    if args.edges:
        for a in sorted(graph):
            for b in sorted(graph[a]):
                print(f"  {a} -> {b}")
    found = cycles(graph)
    by_size = defaultdict(int)
    for c in found:
        by_size[len(c)] += 1
    print(f"{len(found)} cycle(s)")
    for c in found:
        print("  cycle: " + ", ".join(c))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
