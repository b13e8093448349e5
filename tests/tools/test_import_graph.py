"""tools/import_graph.py: re-exports resolved to their submodule, cycles found."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TOOL = Path(__file__).parents[2] / "tools" / "import_graph.py"


def _tool():
    spec = importlib.util.spec_from_file_location("import_graph", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "pkg"
    for name, text in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


def test_a_deferred_circle_is_found_only_with_deferred_imports(tmp_path):
    tool = _tool()
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import g\n\ndef f():\n    return g()\n",
        "b.py": "def g():\n    from .a import f\n    return f\n",
    })  # fmt: skip
    assert tool.cycles(tool.build_graph(pkg, deferred=False)) == []
    assert tool.cycles(tool.build_graph(pkg, deferred=True)) == [["pkg.a", "pkg.b"]]


def test_a_name_reexported_by_a_package_points_at_its_submodule(tmp_path):
    tool = _tool()
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "from .core import thing\nfrom .other import top_user\n",
        "low/core.py": "thing = 1\n",
        "low/other.py": "from ..top import user as top_user\n",
        "top.py": "from .low import thing\nuser = thing\n",
    })  # fmt: skip
    graph = tool.build_graph(pkg, deferred=False)
    assert graph["pkg.top"] == {"pkg.low.core"}  # not the package, so no false circle
    assert tool.cycles(graph) == []
    (pkg / "low" / "core.py").write_text("from ..top import user\nthing = 1\n")
    assert tool.cycles(tool.build_graph(pkg, deferred=False)) == [["pkg.low.core", "pkg.top"]]
