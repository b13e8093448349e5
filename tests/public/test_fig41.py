"""The Figure 4.1 design (Ganesh's thesis, EECS-2022-53, §4.5) and the quick reproduction."""

import csv
import json

import numpy as np
import pytest

from dpconvex.experiments.ganesh import fig41_data, population_mse, reproduce_ganesh_fig4_1


def test_design_is_the_stated_one_and_population_mse_is_exact():
    rng = np.random.default_rng(0)
    k = 250
    X, y, theta_star = fig41_data(k, 40_000, rng)
    first = X[:, : k // 5]
    assert np.all(np.asarray(first.sum(axis=1)).ravel() == pytest.approx(2.0))  # 40 x 0.05
    assert np.all(np.asarray(X[:, k // 5 :].sum(axis=1)).ravel() == pytest.approx(4.0))
    assert set(np.unique(X.data)) == {0.05}
    w = np.concatenate([np.full(k // 5, 0.5), np.full(k - k // 5, -0.25)])
    np.testing.assert_allclose(X @ w, 0.0, atol=1e-12)  # X^T X is exactly singular
    theta = theta_star + 0.3 * rng.standard_normal(k)
    mc = np.mean((y - X @ theta) ** 2)
    assert population_mse(theta, theta_star)[0] == pytest.approx(mc, rel=0.02)
    assert population_mse(theta_star, theta_star)[0] == pytest.approx(0.01)
    with pytest.raises(ValueError, match="multiple of 5"):
        fig41_data(201, 10, rng)


def test_quick_reproduction_writes_files_and_orders_methods(tmp_path):
    summary = reproduce_ganesh_fig4_1(tmp_path, quick=True, progress=False, workers=1)
    for ext in ("csv", "json", "png"):
        assert (tmp_path / f"ganesh_fig4_1_quick.{ext}").stat().st_size > 0
    rows = {r["method"]: r for r in csv.DictReader((tmp_path / "ganesh_fig4_1_quick.csv").open())}
    assert set(rows) == {"dpgd_cold", "dpgd_warm", "pda_dpmd", "public_only"}
    cold, warm = (
        float(rows["dpgd_cold"]["empirical_mse"]),
        float(rows["dpgd_warm"]["empirical_mse"]),
    )
    pda = float(rows["pda_dpmd"]["empirical_mse"])
    assert 0.01 < pda < cold and 0.01 < warm < cold  # pre-training helps (Fig. 4.1a)
    assert float(rows["public_only"]["population_mse"]) > 0.01
    data = json.loads((tmp_path / "ganesh_fig4_1_quick.json").read_text())
    assert data["epsilon"] == 1.0 and data["delta"] == 1e-5 and data["quick"] is True
    assert summary["rows"][0]["trials"] == 3
