"""The in-memory row source over raw rows: the same numbers as the copied design, no copy."""

import numpy as np
import pytest
import scipy.sparse as sp

import dpconvex.data.kernels as row_kernels
from dpconvex import DPLogisticRegression
from dpconvex.data.objective import RowSourceObjective
from dpconvex.data.sources import InMemoryRows
from dpconvex.losses import ClippedLoss, HuberLoss, LogisticLoss
from dpconvex.mechanisms import amp, design_rows
from dpconvex.optim import PerturbedGLMObjective


def _rows(seed=0, n=900, p=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * rng.uniform(0.1, 3, (n, 1))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


POLICIES = [
    ("normalize", 1.0, True),
    ("clip", 2.0, True),
    ("clip", 2.0, False),
    ("error", 12.0, True),
]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("block_rows", [4096, 64])
@pytest.mark.parametrize(("row_norm", "bound", "intercept"), POLICIES)
def test_raw_rows_objective_equals_the_copied_design(
    row_norm, bound, intercept, block_rows, order, monkeypatch
):
    """Independent check: PerturbedGLMObjective on design_rows' copy of the rows."""
    monkeypatch.setattr(row_kernels, "BLOCK_ROWS", block_rows)
    X, y = _rows()
    X = np.asarray(X, order=order)
    loss = ClippedLoss(LogisticLoss(), 0.5)  # binds on some rows (kappa < 1)
    b = np.random.default_rng(1).normal(size=X.shape[1] + intercept)
    Z = design_rows(X, row_norm, bound, intercept, 1.5)
    ref = PerturbedGLMObjective(Z, y, loss, 2.0, b)
    source = InMemoryRows.from_raw(
        X, y, loss, row_norm=row_norm, row_bound=bound, fit_intercept=intercept,
        intercept_scaling=1.5,
    )  # fmt: skip
    obj = source.objective(loss, 2.0, b)
    assert isinstance(obj, RowSourceObjective) and source.d == Z.shape[1]
    assert source.raw is X or np.shares_memory(source.raw, X)  # read in place, not copied
    theta = np.linspace(-1, 1, Z.shape[1])
    v = np.cos(np.arange(Z.shape[1]))
    value, grad = obj.value_and_gradient(theta)
    assert value == pytest.approx(ref.value(theta), rel=1e-12)
    np.testing.assert_allclose(grad, ref.gradient(theta), rtol=1e-11, atol=1e-12)
    g, h = obj.gradient_hessian(theta)
    np.testing.assert_allclose(g, ref.gradient(theta), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(h, ref.hessian(theta), rtol=1e-11)
    np.testing.assert_allclose(obj.hessian(theta), ref.hessian(theta), rtol=1e-11)
    np.testing.assert_allclose(obj.hessian(theta, 7), ref.hessian(theta, 7), rtol=1e-11)
    np.testing.assert_allclose(obj.hessian_vector(theta, v), ref.hessian_vector(theta, v),
                               rtol=1e-11, atol=1e-12)  # fmt: skip
    assert obj.passes == 5 and source.passes == 5  # one pass per evaluation
    np.testing.assert_array_equal(source.design(), Z)


def test_raw_rows_refuse_rows_above_the_bound_when_built():
    X, y = _rows()
    with pytest.raises(ValueError, match="row_bound"):
        InMemoryRows.from_raw(X, y, row_norm="error", row_bound=0.5, fit_intercept=True)
    with pytest.raises(ValueError, match="row_norm"):
        InMemoryRows.from_raw(X, y, row_norm="scale", row_bound=1.0, fit_intercept=True)
    with pytest.raises(ValueError, match="above the declared bound"):
        InMemoryRows(X, y, None, 0.5)


def test_labels_are_shared_rows_and_checked():
    X, y = _rows()
    source = InMemoryRows.from_raw(X, y, row_norm="normalize", row_bound=1.0, fit_intercept=True)
    other = source.with_labels(-y)
    assert other.raw is source.raw and other.design() is source.design()  # built once
    np.testing.assert_array_equal(other.y, -y)
    with pytest.raises(ValueError, match="shape"):
        source.with_labels(y[:-1])
    with pytest.raises(ValueError, match="NaN"):
        source.with_labels(np.full_like(y, np.nan))
    bad = source.with_labels(np.where(y > 0, 2.0, -1.0))  # the loss checks its labels
    with pytest.raises(ValueError, match="labels"):
        bad.objective(LogisticLoss(), 1.0).gradient(np.zeros(7))
    # on the CSR design no kernel looks at them: the mechanism checks them up front
    csr = InMemoryRows.from_raw(sp.csr_matrix(X), y, row_norm="normalize", row_bound=1.0,
                                fit_intercept=True).with_labels(bad.y)  # fmt: skip
    with pytest.raises(ValueError, match="labels"):
        amp(csr, None, "logistic", lam=2.0, sigma=1.0, tau=1e-6, sigma_out=1.0, clip=1.0,
            row_bound=np.sqrt(2.0), rng=np.random.default_rng(0))  # fmt: skip


def test_subsample_takes_evenly_spaced_rows_of_the_same_policy():
    X, y = _rows()
    source = InMemoryRows.from_raw(X, y, row_norm="clip", row_bound=2.0, fit_intercept=True)
    sub = source.subsample(100)
    keep = np.linspace(0, 899, 100).astype(int)
    np.testing.assert_array_equal(sub.design(), design_rows(X[keep], "clip", 2.0, True))
    np.testing.assert_array_equal(sub.y, y[keep])
    obj = source.objective(LogisticLoss(), 3.0, np.ones(7))
    small = obj.subsample(100)
    assert small.n == 100 and small.lam == pytest.approx(3.0 * 100 / 900)
    np.testing.assert_allclose(small.b, np.ones(7) * 100 / 900)


def test_mostly_zero_and_sparse_rows_use_the_csr_design():
    rng = np.random.default_rng(3)
    X = np.where(rng.random((500, 20)) < 0.1, 1.0, 0.0)
    y = np.where(rng.random(500) < 0.5, 1.0, -1.0)
    for rows in (X, sp.csr_matrix(X)):
        source = InMemoryRows.from_raw(
            rows, y, row_norm="normalize", row_bound=1.0, fit_intercept=True
        )
        obj = source.objective(LogisticLoss(), 1.0)
        assert isinstance(obj, PerturbedGLMObjective) and sp.issparse(obj.X)
        ref = PerturbedGLMObjective(design_rows(X, "normalize", 1.0, True), y, LogisticLoss(), 1.0)
        theta = np.linspace(-1, 1, 21)
        np.testing.assert_allclose(obj.gradient(theta), ref.gradient(theta), rtol=1e-12)


def test_rows_wider_than_the_exact_hessian_limit_use_the_design():
    """Beyond IN_MEMORY_EXACT_MAX_D Newton multiplies by the Hessian many times at one
    point: the design's objective, which keeps that point's curvature, serves them."""
    from dpconvex.optim.solvers import IN_MEMORY_EXACT_MAX_D

    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, IN_MEMORY_EXACT_MAX_D))
    y = np.where(rng.random(50) < 0.5, 1.0, -1.0)
    wide = InMemoryRows.from_raw(X, y, row_norm="normalize", row_bound=1.0, fit_intercept=True)
    narrow = InMemoryRows.from_raw(
        X[:, :-1], y, row_norm="normalize", row_bound=1.0, fit_intercept=True
    )
    assert isinstance(wide.objective(LogisticLoss(), 1.0), PerturbedGLMObjective)
    assert isinstance(narrow.objective(LogisticLoss(), 1.0), RowSourceObjective)


def test_estimator_fit_is_amp_on_the_copied_design_for_the_same_noise():
    """The estimator reads the raw rows; amp() on the design copy, same seed, same release
    up to the certificate: both minimizers of the same perturbed objective within tau/lam."""
    X, y = _rows(n=3000)
    model = DPLogisticRegression(epsilon=1.0, random_state=5).fit(X, np.where(y > 0, 1, 0))
    p = model.mechanism_params_
    Z = design_rows(X, "normalize", 1.0, True)
    rel = amp(
        Z, y, "logistic", lam=p["lam"], sigma=p["sigma"], tau=p["tau"],
        sigma_out=p["sigma_out"], clip=p["clip"], row_bound=np.sqrt(2.0),
        rng=np.random.default_rng(5),
    )  # fmt: skip
    theta = np.append(model.coef_.ravel(), model.intercept_)
    assert np.linalg.norm(theta - rel.theta) <= 2 * p["tau"] / p["lam"] + 1e-12


@pytest.mark.parametrize("solver", ["svrg", "lbfgs", "newton"])
def test_every_solver_runs_on_raw_rows(solver):
    X, y = _rows(n=600)
    model = DPLogisticRegression(epsilon=2.0, solver=solver, random_state=0)
    model.fit(X, np.where(y > 0, 1, 0))
    assert np.all(np.isfinite(model.coef_)) and model.score(X, np.where(y > 0, 1, 0)) > 0.6


def test_huber_regression_on_raw_rows_matches_the_design():
    X, y = _rows()
    target = np.clip(X[:, 1] / 3, -1, 1)
    loss = HuberLoss(0.5)
    source = InMemoryRows.from_raw(X, target, loss, row_norm="clip", row_bound=2.0,
                                   fit_intercept=False)  # fmt: skip
    ref = PerturbedGLMObjective(design_rows(X, "clip", 2.0, False), target, loss, 1.0)
    theta = np.linspace(-2, 2, 6)
    np.testing.assert_allclose(source.objective(loss, 1.0).gradient(theta),
                               ref.gradient(theta), rtol=1e-11)  # fmt: skip


@pytest.mark.parametrize(("row_norm", "bound", "intercept"), POLICIES)
def test_held_row_scales_are_the_rows_own_and_filled_by_the_first_pass(
    row_norm, bound, intercept, monkeypatch
):
    """The first pass keeps each row's factor and norm; later passes read them, not the rows'
    norms: the same numbers as blocks that compute their own, whichever pass comes first."""
    monkeypatch.setattr(row_kernels, "BLOCK_ROWS", 64)
    X, y = _rows(n=500)
    loss = ClippedLoss(LogisticLoss(), 0.5)
    rows = {"row_norm": row_norm, "row_bound": bound, "fit_intercept": intercept,
            "intercept_scaling": 1.5}  # fmt: skip
    Z = design_rows(X, row_norm, bound, intercept, 1.5)
    scales = row_kernels.chunk_scales(X, rows)
    factors = np.linalg.norm(design_rows(X, row_norm, bound, False), axis=1) / np.linalg.norm(
        X, axis=1
    )
    np.testing.assert_allclose(scales[:, 0], factors, rtol=1e-14)
    np.testing.assert_allclose(scales[:, 1], np.linalg.norm(Z, axis=1), rtol=1e-14)
    theta = np.linspace(-1, 1, Z.shape[1])
    ref = PerturbedGLMObjective(Z, y, loss, 2.0)
    for first in ("strided hessian", "gradient"):
        source = InMemoryRows.from_raw(X, y, loss, row_norm=row_norm, row_bound=bound,
                                       fit_intercept=intercept, intercept_scaling=1.5)  # fmt: skip
        obj = source.objective(loss, 2.0)
        assert "scales" not in source._built
        if first == "strided hessian":  # blocks cut at a multiple of the stride
            np.testing.assert_allclose(obj.hessian(theta, 7), ref.hessian(theta, 7), rtol=1e-11)
        for _ in range(2):
            np.testing.assert_allclose(obj.gradient(theta), ref.gradient(theta), rtol=1e-11,
                                       atol=1e-12)  # fmt: skip
            held = source._built["scales"]
            assert held.filled
            np.testing.assert_array_equal(held.values, scales)
        assert source.with_labels(-y)._built["scales"] is held  # shared, not recomputed


def test_a_failed_first_pass_keeps_no_scales():
    X, y = _rows(n=300)
    X[250, 2] = np.nan
    source = InMemoryRows.from_raw(X, y, row_norm="normalize", row_bound=1.0, fit_intercept=True)
    obj = source.objective(LogisticLoss(), 1.0)
    for _ in range(2):  # refused every time, not only while the scales are being filled
        with pytest.raises(ValueError, match="NaN or infinity"):
            obj.gradient(np.zeros(7))
        assert not source._built["scales"].filled
