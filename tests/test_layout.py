"""The package's shape, as docs/architecture.md draws it: layers whose imports point down
only, no import circle (deferred imports included), no module over 500 lines outside the
reproductions (experiments/), and no internal paper names in the source."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "dpconvex"
MAX_LINES = 500


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_point_down_the_layers():
    layers = _tool("layers")
    assert layers.upward_edges(SRC) == []


def test_no_import_circle_even_through_deferred_imports():
    graph = _tool("import_graph")
    assert graph.cycles(graph.build_graph(SRC, deferred=True)) == []


def test_every_module_belongs_to_a_layer():
    layers = _tool("layers")
    graph = _tool("import_graph").build_graph(SRC, deferred=True)
    for module in graph:
        layers.layer_of(module)  # KeyError names the module and the fix


def test_no_module_over_500_lines_outside_the_reproductions():
    long = {
        str(path.relative_to(SRC)): n
        for path in SRC.rglob("*.py")
        if "experiments" not in path.parts
        and (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_source_cites_papers_not_internal_names():
    pattern = re.compile(r"seed 00\d|spec/", re.I)
    hits = [
        f"{path.relative_to(SRC)}:{k + 1}"
        for path in SRC.rglob("*.py")
        for k, line in enumerate(path.read_text().splitlines())
        if pattern.search(line)
    ]
    assert hits == []
