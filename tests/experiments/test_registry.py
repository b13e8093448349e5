"""Reproductions are named after what they reproduce; the papers' figure numbers stay
accepted as aliases of the same runs."""

import pytest

from dpconvex.experiments.registry import ALIASES, REPRODUCTIONS, run_reproduction


def test_every_alias_names_a_reproduction_and_no_name_is_both():
    assert set(ALIASES.values()) <= set(REPRODUCTIONS)
    assert not set(ALIASES) & set(REPRODUCTIONS)


def test_an_alias_runs_the_same_reproduction(tmp_path):
    pytest.importorskip("matplotlib")
    new, old = tmp_path / "new", tmp_path / "old"
    new.mkdir(), old.mkdir()
    run_reproduction("objpert-privacy-bounds", new, quick=True, trials=None)
    run_reproduction("fig1", old, quick=True, trials=None)
    csvs = sorted(p.name for p in new.glob("*.csv"))
    assert csvs and csvs == sorted(p.name for p in old.glob("*.csv"))
    for name in csvs:
        assert (new / name).read_bytes() == (old / name).read_bytes()


def test_an_unknown_name_is_refused_with_the_list():
    with pytest.raises(ValueError, match="objpert-privacy-bounds"):
        run_reproduction("fig9", None, quick=True, trials=None)
