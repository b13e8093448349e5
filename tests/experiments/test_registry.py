"""The reproduction registry: a fixed table, no import by a user-given name, no env vars."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from dpconvex.cli import cli
from dpconvex.experiments.registry import REPRODUCTIONS, run_reproduction


def test_an_unknown_name_is_refused_before_anything_is_imported(tmp_path):
    with pytest.raises(ValueError, match="unknown reproduction 'os:system'"):
        run_reproduction("os:system", tmp_path, quick=True, trials=None)


def test_the_command_offers_exactly_the_registry():
    param = next(p for p in cli.commands["reproduce"].params if p.name == "name")
    assert tuple(param.type.choices) == tuple(REPRODUCTIONS)


def test_the_mnist_path_is_an_argument_not_an_environment_variable(tmp_path, monkeypatch):
    mbcd = importlib.import_module("dpconvex.experiments.mbcd")
    seen = {}

    def stand_in(out, quick=False, trials=None, mnist=None):
        seen.update(mnist=mnist, env=dict(os.environ))
        return {}

    monkeypatch.setattr(mbcd, "reproduce_mbcd_classification", stand_in)
    before = dict(os.environ)
    path = tmp_path / "mnist_5k.csv.gz"
    run_reproduction("mbcd-classification", tmp_path, quick=True, trials=None, mnist=path)
    assert seen["mnist"] == path and seen["env"] == before and dict(os.environ) == before
    assert isinstance(seen["mnist"], Path)
