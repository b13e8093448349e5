"""The layers of dpconvex, checked against its import graph, and their picture.

    python tools/layers.py                 # every import that points up a layer (none: exit 0)
    python tools/layers.py --draw PNG      # the picture of docs/architecture.md

A module belongs to the layer of its longest listed prefix (``dpconvex.accounting.pld`` to
the layer holding ``accounting``; ``dpconvex.models.persist`` to the one listing it). An
import may point into its own layer or any layer below; the graph counts deferred imports
(inside functions) too, so a late import cannot hide a dependency that goes up.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dpconvex"

#: top to bottom: (layer, what it holds, its top-level parts)
LAYERS: list[tuple[str, str, tuple[str, ...]]] = [
    ("front ends", "command line, reproductions and figures, privacy audits",
     ("cli", "__main__", "experiments", "audit")),
    ("workflows", "table models, pipelines, private search, model files",
     ("__init__", "table_model", "pipeline", "tuning", "models.persist",
      "models.pipeline_files")),
    ("estimators", "scikit-learn estimators, the table encoder, the session record",
     ("models", "preprocessing")),
    ("methods", "one module per method of the linear core: its plan and its release",
     ("mechanisms",)),
    ("families", "DP-SCO, DP-MBCD, mirror descent with public data, Langevin, counting",
     ("sco", "bcd", "public", "sampling", "queries")),
    ("data and optimization", "rows, batches, kernels and sources; table cells; noise; "
     "solvers and the noisy-gradient loop; files",
     ("data", "scale", "optim", "datasets", "noise", "discrete_noise",
      "preprocessing.schema", "preprocessing.columns", "preprocessing.defaults",
      "preprocessing.centring")),
    ("accounting", "events, accountants (PLD, RDP), calibration, the budget ledger",
     ("accounting", "budget")),
    ("foundations", "losses, releases, validation, randomness, logging",
     ("losses", "release", "_validation", "_random", "_arrays", "_logs", "_forksafe")),
]  # fmt: skip


def _graph_tool():
    spec = importlib.util.spec_from_file_location("import_graph", Path(__file__).parent /
                                                  "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def layer_of(module: str) -> int:
    """The index of ``module``'s layer in :data:`LAYERS` (0 is the top).

    The longest listed prefix decides: ``models.persist`` is listed on its own, every
    other ``models.*`` module goes with ``models``.
    """
    parts = module.split(".")[1:] or ["__init__"]
    for size in range(len(parts), 0, -1):
        prefix = ".".join(parts[:size])
        for index, (_, _, members) in enumerate(LAYERS):
            if prefix in members:
                return index
    raise KeyError(f"{module} belongs to no layer: add {parts[0]!r} to tools/layers.py")


def upward_edges(src: Path = SRC) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    graph = _graph_tool().build_graph(src, deferred=True)
    return sorted(
        (a, b) for a, targets in graph.items() for b in targets if layer_of(b) < layer_of(a)
    )


def _parts_label(members: tuple[str, ...]) -> str:
    """``a, b.{x, y}``: the layer's parts, sub-modules of one package grouped."""
    groups: dict[str, list[str]] = {}
    for m in members:
        if m in ("__init__", "__main__"):
            continue
        head, _, tail = m.partition(".")
        groups.setdefault(head, [])
        if tail:
            groups[head].append(tail)
    return ", ".join(
        h if not tails else f"{h}.{{{', '.join(tails)}}}" for h, tails in groups.items()
    )


def draw(path: Path, src: Path = SRC) -> None:
    """The layers as stacked boxes: name, module count, what it holds, its parts."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graph = _graph_tool().build_graph(src, deferred=True)
    counts: dict[int, int] = {}
    for module in graph:
        counts[layer_of(module)] = counts.get(layer_of(module), 0) + 1
    height = 1.0
    fig = plt.figure(figsize=(10, 0.95 * len(LAYERS) + 0.2))
    ax = fig.add_axes([0.0, 0.0, 1.0, 1.0])
    for row, (name, what, members) in enumerate(LAYERS):
        y = (len(LAYERS) - 1 - row) * height
        ax.add_patch(plt.Rectangle((0.1, y + 0.06), 9.2, height - 0.12, facecolor=f"C{row}",
                                   alpha=0.16, edgecolor="0.35"))
        ax.text(0.25, y + 0.74, f"{name}  ({counts.get(row, 0)} modules)", fontsize=11,
                weight="bold", va="center")
        ax.text(0.25, y + 0.48, what, fontsize=9, va="center", color="0.2")
        parts = textwrap.shorten(_parts_label(members), 118, placeholder=" ...")
        ax.text(0.25, y + 0.22, parts, fontsize=8, va="center", family="monospace",
                color="0.15")
    top = len(LAYERS) * height
    ax.annotate("", xy=(9.6, 0.15), xytext=(9.6, top - 0.15),
                arrowprops={"arrowstyle": "-|>", "color": "0.3", "lw": 1.5})
    ax.text(9.78, top / 2, "imports point down only", rotation=270, va="center",
            ha="center", fontsize=9, color="0.3")
    ax.set_xlim(0, 10)
    ax.set_ylim(0, top)
    ax.axis("off")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draw", metavar="PNG", help="write the picture of the layers")
    args = parser.parse_args(argv)
    if args.draw:
        draw(Path(args.draw))
        print(f"wrote {args.draw}")
    bad = upward_edges()
    for a, b in bad:
        print(f"up: {a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})")
    print(f"{len(bad)} import(s) point up a layer")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
