"""matplotlib is the ``figures`` extra: without it, drawing commands name the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpconvex.cli import main
from dpconvex.experiments.figures import MissingFiguresExtraError, pyplot
from dpconvex.experiments.registry import run_reproduction


@pytest.fixture
def no_matplotlib(monkeypatch):
    """matplotlib made unimportable (a None entry in sys.modules makes import raise)."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_a_reproduction_refuses_before_any_work_naming_the_extra(no_matplotlib, tmp_path):
    with pytest.raises(MissingFiguresExtraError, match=r'pip install "dpconvex\[figures\]"'):
        run_reproduction("fig1", tmp_path, quick=True, trials=None)
    assert list(tmp_path.iterdir()) == []


def test_pyplot_is_an_import_error_naming_what_draws(no_matplotlib):
    with pytest.raises(ImportError, match="plot_x draws figures with matplotlib"):
        pyplot("plot_x")


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "fig3", "--quick", "--out", "{tmp}/r"],
        ["plot", "privacy-profile", "--sigma", "1", "--lam", "1", "--beta", "0.25"]
        + ["--lipschitz", "1", "--out", "{tmp}/p.png"],
    ],
)
def test_drawing_commands_print_one_line_naming_the_extra(no_matplotlib, tmp_path, capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main([a.format(tmp=tmp_path) for a in argv])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert stop.value.code == 2 and len(errors) == 1
    err = errors[0]
    assert err.startswith("dpconvex: error: ")
    assert 'matplotlib, which is not installed: pip install "dpconvex[figures]"' in err
    assert not (tmp_path / "p.png").exists()


def test_the_library_and_the_demo_do_not_import_matplotlib():
    code = (
        "import sys, dpconvex, dpconvex.cli, dpconvex.experiments.registry, "
        "dpconvex.experiments.demo; assert 'matplotlib' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
