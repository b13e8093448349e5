"""Quick reproductions of Chen & Liu, arXiv 2407.08233 (mbcd-privacy, -nmf, -classification)."""

import csv
import json

import numpy as np
import pytest

from dpconvex.experiments.mbcd import (
    reproduce_mbcd_classification,
    reproduce_mbcd_nmf,
    reproduce_mbcd_privacy,
)


def _rows(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_privacy_quick(tmp_path):
    summary = reproduce_mbcd_privacy(tmp_path, quick=True)
    for name in (
        "mbcd_privacy.png",
        "mbcd_privacy.json",
        "mbcd_privacy.csv",
        "mbcd_privacy_coupled.csv",
        "mbcd_privacy_run.csv",
    ):
        assert (tmp_path / name).stat().st_size > 0
    assert json.loads((tmp_path / "mbcd_privacy.json").read_text())["hsa_le_composition"]
    rows = _rows(tmp_path / "mbcd_privacy.csv")
    hsa = np.array([float(r["hsa_rdp_constant"]) for r in rows])
    comp = np.array([float(r["comp_rdp_constant"]) for r in rows])
    assert np.all(hsa <= comp) and np.all(np.diff(hsa) >= -1e-15)
    assert hsa[-1] <= summary["limit_rdp_constant"] * (1 + 1e-12)
    assert hsa[-1] == pytest.approx(summary["limit_rdp_constant"], rel=1e-6)  # converged
    assert comp[-1] == pytest.approx(len(rows) * comp[0], rel=1e-9)  # linear growth
    for r in summary["single_block_run"]:
        assert r["hidden_state_eps"] < r["composition_eps_rdp"]
    coupled = summary["coupled_blocks"]
    assert coupled[-1]["exact_rdp"] > coupled[-1]["paper_per_block_rdp"]


def test_nmf_quick(tmp_path):
    summary = reproduce_mbcd_nmf(tmp_path, quick=True)
    assert (tmp_path / "mbcd_nmf.png").stat().st_size > 0
    assert "refused" in summary["hidden_state_refused"]
    runs = _rows(tmp_path / "mbcd_nmf_runs.csv")
    for r in runs:
        if r["method"] in ("dp_mbcd", "dp_sgd"):
            assert float(r["epsilon_spent"]) <= float(r["epsilon"])
    for row in summary["table"]:
        assert row["mbcd"] < 0.2 and row["dp_mbcd_eps0.42"] < 0.3  # better than a random Y
    json.loads((tmp_path / "mbcd_nmf.json").read_text())


@pytest.mark.slow  # about 20-30 s on the shared machine: run with -m slow
def test_classification_quick(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCONVEX_MNIST_5K", str(tmp_path / "absent.csv.gz"))
    summary = reproduce_mbcd_classification(tmp_path, quick=True)
    assert summary["notes"] and "MNIST 5k skipped" in summary["notes"][0]
    assert (tmp_path / "mbcd_classification.png").stat().st_size > 0
    methods = {(r["dataset"], r["method"]) for r in summary["table"]}
    expected = ("dp_mbcd", "dp_mbcd_variant", "dp_sgd", "mbcd", "mbcd_variant", "sgd")
    assert methods == {("madelon-like", m) for m in expected}
    for r in _rows(tmp_path / "mbcd_classification_runs.csv"):
        if r["method"].startswith("dp_"):
            assert float(r["epsilon_spent"]) <= float(r["epsilon"])
    nonprivate = [r for r in summary["table"] if r["method"] == "mbcd_variant"][0]
    assert nonprivate["accuracy"] > 35  # 5 classes: chance is 20 %
