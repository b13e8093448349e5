"""Mechanisms release only what their analysis covers, and say which event prices them."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting.dp_event import SelfComposedDpEvent

from dpconvex.accounting import AmpDpEvent, GaussianDpEvent, dpsgd_event
from dpconvex.data.clipping import clipped_gradient_sum
from dpconvex.losses import ClippedLoss, HuberLoss, LogisticLoss, SquaredLoss
from dpconvex.mechanisms import (
    add_intercept,
    amp,
    design_bound,
    dpgd,
    dpsgd,
    output_perturbation,
    output_sensitivity,
    transform_rows,
)
from dpconvex.optim import CertificateError, PerturbedGLMObjective, solve

R = math.sqrt(2)


def _data(rng, n=600, d=8):
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3, (n, 1))
    Xt = add_intercept(transform_rows(X, "normalize", 1.0), 1.0)
    y = np.where(Xt[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return Xt, y


def test_amp_releases_with_its_event():
    rng = np.random.default_rng(0)
    X, y = _data(rng)
    rel = amp(
        X, y, "logistic", lam=4.0, sigma=6.0, tau=0.01, sigma_out=0.15, clip=R, row_bound=R, rng=rng
    )
    assert rel.event == AmpDpEvent(6.0, 4.0, 0.25 * R**2, R, 0.01, 0.15)
    assert rel.info["grad_norm"] <= 0.01
    assert rel.theta.shape == (X.shape[1],)


def test_amp_gradient_bound_uses_the_smaller_of_clip_and_loss_bound():
    rng = np.random.default_rng(1)
    X, _ = _data(rng)
    y = np.clip(X[:, 0], -1, 1)
    rel = amp(
        X,
        y,
        HuberLoss(0.25),
        lam=3.0,
        sigma=5.0,
        tau=0.01,
        sigma_out=0.15,
        clip=R,
        row_bound=R,
        rng=rng,
    )
    assert rel.event.lipschitz == pytest.approx(0.25 * R)  # |f'| <= 0.25 on rows <= R
    assert rel.event.beta == pytest.approx(R**2)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"lam": 0.5}, ValueError, "lam must be > beta"),
        ({"lam": 0.3}, ValueError, "lam must be > beta"),
        ({"row_bound": 1.0}, ValueError, "declared bound"),
        ({"loss": object()}, TypeError, "GLM"),
        ({"y": "continuous"}, ValueError, "labels"),
        ({"y": "nan"}, ValueError, "NaN"),
    ],
)
def test_amp_refuses_outside_its_analysis(kwargs, error, match):
    rng = np.random.default_rng(2)
    X, y = _data(rng)
    args = {"lam": 4.0, "row_bound": R, "loss": "logistic"}
    args.update({k: v for k, v in kwargs.items() if k != "y"})
    if kwargs.get("y") == "continuous":
        y = X[:, 0]
    elif kwargs.get("y") == "nan":
        y = y.copy()
        y[0] = np.nan
    with pytest.raises(error, match=match):
        amp(
            X,
            y,
            args["loss"],
            lam=args["lam"],
            sigma=5.0,
            tau=0.01,
            sigma_out=0.15,
            clip=R,
            row_bound=args["row_bound"],
            rng=rng,
        )


def test_amp_certifies_whatever_max_iter_and_releases_nothing_below_the_float_floor():
    """max_iter=3 with L-BFGS raised CertificateError before; now the fit certifies (the
    Newton polish, or the provable phase when the polish is off). With tau below float64's
    rounding nothing is released, and the message is the same for two data sets of
    different sizes (it carries no number)."""
    rng = np.random.default_rng(3)
    X, y = _data(rng, n=3000)
    kw = {"sigma": 1.0, "sigma_out": 0.15, "clip": R, "row_bound": R, "solver": "lbfgs"}
    rel = amp(X, y, "logistic", lam=0.6, tau=1e-9, rng=rng, max_iter=3, **kw)
    assert rel.info["grad_norm"] <= 1e-9
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("dpconvex.optim.solvers.POLISH_STEPS", 0)
        rel = amp(X, y, "logistic", lam=0.6, tau=1e-9, rng=rng, max_iter=3, **kw)
    assert rel.info["solver"] == "accelerated" and rel.info["grad_norm"] <= 1e-9
    messages = []
    for n in (40, 90):
        with pytest.raises(CertificateError, match="nothing is released") as caught:
            amp(X[:n], y[:n], "logistic", lam=50.0, tau=1e-300, rng=rng, max_iter=3, **kw)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and not any(ch.isdigit() for ch in messages[0])


def test_output_perturbation_sensitivity_holds_on_neighbours():
    """||theta~(Z) - theta~(Z')|| <= (L + 2 tau)/lam for add/remove neighbours.

    Sensitivity from Wang's CS291A lecture notes on objective perturbation (UCSB, 2021).
    """
    rng = np.random.default_rng(4)
    X, y = _data(rng, n=300)
    lam, tau = 3.0, 0.01
    loss = ClippedLoss(LogisticLoss(), R)
    full = solve(PerturbedGLMObjective(X, y, loss, lam), tau).theta
    worst = 0.0
    for i in rng.choice(300, 40, replace=False):
        keep = np.arange(300) != i
        theta = solve(PerturbedGLMObjective(X[keep], y[keep], loss, lam), tau).theta
        worst = max(worst, np.linalg.norm(full - theta))
    assert 0 < worst <= output_sensitivity(R, lam, tau)
    rel = output_perturbation(
        X, y, "logistic", lam=lam, sigma=0.5, tau=tau, clip=None, row_bound=R, rng=rng
    )
    assert rel.event == GaussianDpEvent(0.5 / output_sensitivity(R, lam, tau))


def test_output_perturbation_needs_a_gradient_bound():
    rng = np.random.default_rng(5)
    X, _ = _data(rng)
    with pytest.raises(ValueError, match="unbounded gradient"):
        output_perturbation(
            X, X[:, 0], SquaredLoss(), lam=1.0, sigma=1.0, tau=0.01, clip=None, row_bound=R, rng=rng
        )


def test_clipped_gradient_sum_matches_per_example_loop():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50, 5)) * 2
    y = rng.choice([-1.0, 1.0], 50)
    theta = rng.normal(size=5) * 3
    loss = LogisticLoss()
    expected = np.zeros(5)
    for xi, yi in zip(X, y, strict=True):
        g = loss.derivative(np.array([xi @ theta]), np.array([yi]))[0] * xi
        expected += g * min(1.0, 0.5 / np.linalg.norm(g))
    got = clipped_gradient_sum(X, y, np.linalg.norm(X, axis=1), loss, theta, 0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_dpsgd_and_dpgd_events():
    rng = np.random.default_rng(7)
    X, y = _data(rng)
    rel = dpsgd(
        X,
        y,
        "logistic",
        noise_multiplier=1.1,
        clip=R,
        sampling_rate=0.1,
        steps=30,
        learning_rate=0.05,
        row_bound=R,
        rng=rng,
    )
    assert rel.event == dpsgd_event(1.1, 0.1, 30)
    rel = dpgd(
        X,
        y,
        "logistic",
        noise_multiplier=5.0,
        clip=R,
        steps=20,
        learning_rate=0.05,
        row_bound=R,
        rng=rng,
        optimizer="sgd",
    )
    assert rel.event == SelfComposedDpEvent(GaussianDpEvent(5.0), 20)
    with pytest.raises(ValueError, match="optimizer"):
        dpgd(
            X,
            y,
            "logistic",
            noise_multiplier=5.0,
            clip=R,
            steps=2,
            learning_rate=0.05,
            row_bound=R,
            rng=rng,
            optimizer="rmsprop",
        )


def test_row_policies():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]])
    np.testing.assert_allclose(
        np.linalg.norm(transform_rows(X, "normalize", 1.0), axis=1), [1, 0, 1]
    )
    np.testing.assert_allclose(np.linalg.norm(transform_rows(X, "clip", 2.0), axis=1), [2, 0, 0.5])
    with pytest.raises(ValueError, match="row 0 has norm 5"):
        transform_rows(X, "error", 2.0)
    assert transform_rows(X, "error", 5.0) is X
    Xs = transform_rows(sp.csr_matrix(X), "normalize", 1.0)
    np.testing.assert_allclose(Xs.toarray(), transform_rows(X, "normalize", 1.0))
    assert design_bound("normalize", 7.0, True, 1.0) == pytest.approx(R)
    assert design_bound("clip", 3.0, False, 1.0) == 3.0
    with pytest.raises(ValueError, match="row_norm"):
        transform_rows(X, "scale", 1.0)


@pytest.mark.parametrize("runs", [1, 3])
def test_dpsgd_on_csr_rows_survives_empty_batches(runs):
    """A Poisson batch can be empty; the sparse kernel's sum is then zeros, not integers
    (numpy's bincount returns integers when it counts nothing)."""
    from dpconvex.mechanisms import dpsgd_runs

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(np.where(rng.random((40, 5)) < 0.3, 0.4, 0.0))
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    theta = dpsgd_runs(
        X, y, "logistic", noise_multiplier=1.0, clip=0.5, sampling_rate=1e-3, steps=3,
        learning_rates=np.full(runs, 0.1), optimizer="sgd", lam=0.0, row_bound=1.0,
        rng=np.random.default_rng(1),
    )  # fmt: skip
    assert theta.shape == (runs, 5) and theta.dtype == np.float64 and np.all(np.isfinite(theta))


@pytest.mark.parametrize("kernel", ["_PaddedRows", "_SparseRows", "_DenseAllRows", "_DenseGather"])
@pytest.mark.parametrize("q", [0.2, 1e-3])
def test_dpsgd_batch_kernels_sum_the_clipped_gradients_of_their_poisson_batches(kernel, q):
    """Every kernel returns, per run, sum_{i in B_r} clip_C(grad l_i(theta_r)) over the
    Poisson batches B_r that poisson_batches draws from the same generator: checked
    against a per-run sum over the gathered rows (zero rows and empty batches included)."""
    import importlib

    module = importlib.import_module("dpconvex.data.batch_gradients")
    rng = np.random.default_rng(3)
    n, d, runs, clip = 300, 6, 4, 0.7
    X = np.where(rng.random((n, d)) < 0.4, rng.normal(size=(n, d)), 0.0)
    X[7] = 0.0  # a row with no non-zero: padded entirely
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    norms = np.linalg.norm(X, axis=1)
    theta = rng.normal(size=(runs, d))
    sparse = kernel in ("_PaddedRows", "_SparseRows")
    data = sp.csr_matrix(X) if sparse else X
    got = getattr(module, kernel)(data, y, norms, LogisticLoss(), clip, q).gradients(
        theta, np.random.default_rng(9)
    )
    rows, sizes = module.poisson_batches(np.random.default_rng(9), n, q, runs)
    batches = np.split(rows, np.cumsum(sizes)[:-1])
    expected = np.array(
        [
            clipped_gradient_sum(X[b], y[b], norms[b], LogisticLoss(), theta[r], clip)
            for r, b in enumerate(batches)
        ]
    )
    assert got.shape == (runs, d) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("runs", [1, 2, 3, 40])
def test_poisson_batches_keep_each_row_with_probability_q(runs):
    from dpconvex.data.batches import poisson_batches

    rng = np.random.default_rng(4)
    n, q, draws = 50, 0.3, 400
    counts = np.zeros(n)
    total = 0
    for _ in range(draws):
        rows, sizes = poisson_batches(rng, n, q, runs)
        assert sizes.shape == (runs,) and sizes.sum() == rows.size
        for batch in np.split(rows, np.cumsum(sizes)[:-1]):
            assert np.all((batch >= 0) & (batch < n)) and np.unique(batch).size == batch.size
            np.add.at(counts, batch, 1)
        total += runs
    # each row's inclusion frequency: binomial(total, q), within 5 standard deviations
    assert np.all(np.abs(counts / total - q) < 5 * math.sqrt(q * (1 - q) / total))


@pytest.mark.parametrize("sparse", [False, True])
def test_full_batch_kernel_sums_every_clipped_gradient(sparse):
    import importlib

    module = importlib.import_module("dpconvex.data.batch_gradients")
    rng = np.random.default_rng(5)
    n, d, runs, clip = 120, 5, 3, 0.6
    X = np.where(rng.random((n, d)) < 0.5, rng.normal(size=(n, d)), 0.0)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    norms = np.linalg.norm(X, axis=1)
    theta = rng.normal(size=(runs, d))
    data = sp.csr_matrix(X) if sparse else X
    got = module._FullBatch(data, y, norms, LogisticLoss(), clip).gradients(theta, None)
    expected = [clipped_gradient_sum(X, y, norms, LogisticLoss(), t, clip) for t in theta]
    assert got.shape == (runs, d)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
