"""The audit package imports downwards only: no circle, deferred imports counted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _tool():
    path = ROOT / "tools" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_circle_passes_through_the_audit_package():
    tool = _tool()
    graph = tool.build_graph(ROOT / "src" / "dpconvex", deferred=True)
    assert "dpconvex.audit.linear_loss" in graph["dpconvex.audit.mechanisms_ganesh"]
    circles = [c for c in tool.cycles(graph) if any(m.startswith("dpconvex.audit") for m in c)]
    assert circles == []
