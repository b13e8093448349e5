"""The certified solve cannot fail on valid input, and what it computes stays within C.

* the provable phase's iteration budget is at least what Nesterov's method needs (checked
  by running it, and the cited rate checked along the run);
* a failed certificate says nothing about the data (a fixed message);
* the clip of the clipped loss is never skipped when it could bind (no gradient above C).
"""

import math
import sys

import numpy as np
import pytest

import dpconvex.optim.accelerated as accelerated
import dpconvex.optim.solvers as solvers
from dpconvex.losses import (
    ClippedLoss,
    HuberLoss,
    LogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
)
from dpconvex.optim import CertificateError, PerturbedGLMObjective, solve
from dpconvex.optim.objective import RarelyClippedLoss, clipping_kappa


def _rows(rng, n, d, norm=1.0):
    X = rng.normal(size=(n, d))
    return norm * X / np.linalg.norm(X, axis=1, keepdims=True)


def _nesterov_steps(obj, theta, tau, limit):
    """Independent run of the scheme of accelerated_budget's docstring: the first k with
    ||grad F(y_k)|| <= tau, the values F(x_k) and the norms ||grad F(y_k)|| (k >= 1)."""
    L, mu = accelerated.SMOOTHNESS_ALLOWANCE * obj.smoothness(), obj.lam
    m = (math.sqrt(L / mu) - 1) / (math.sqrt(L / mu) + 1)
    x = y = theta
    values, norms = [obj.value(x)], []
    for k in range(1, limit + 1):
        x_next = y - obj.gradient(y) / L
        y = x_next + m * (x_next - x)
        x = x_next
        values.append(obj.value(x))
        norms.append(float(np.linalg.norm(obj.gradient(y))))
        if norms[-1] <= tau:
            return k, values, norms
    return None, values, norms


@pytest.mark.parametrize(
    ("loss", "spread"), [(SquaredLoss(), 1.0), (SquaredLoss(), 30.0), (LogisticLoss(), 1.0)]
)
def test_budget_covers_the_iterations_nesterov_needs_and_the_cited_rate_holds(loss, spread):
    """On quadratics (an ill-conditioned one: rows stretched along one axis, and a start
    on the slowest eigenvector) and a logistic objective: the steps needed <= budget, and
    F(x_k) - F* <= (1 - 1/sqrt(kappa))^k (F(x_0) - F* + mu/2 ||x_0 - x*||^2) all along."""
    rng = np.random.default_rng(0)
    X = _rows(rng, 60, 4)
    X[:, 0] *= spread
    y = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    obj = PerturbedGLMObjective(X, y, loss, 0.5, rng.normal(size=4))
    optimum = solve(PerturbedGLMObjective(X, y, loss, 0.5, obj.b), 1e-12).theta
    f_star = obj.value(optimum)
    kappa = accelerated.SMOOTHNESS_ALLOWANCE * obj.smoothness() / obj.lam
    starts = [np.zeros(4), optimum + np.linalg.eigh(X.T @ X)[1][:, 0]]
    for start in starts:
        g0 = float(np.linalg.norm(obj.gradient(start)))
        for tau in (1e-2 * g0, 1e-6 * g0):
            budget = accelerated.accelerated_budget(kappa, g0, tau)
            needed, values, norms = _nesterov_steps(obj, start, tau, budget)
            assert needed is not None and needed <= budget
            phi0 = values[0] - f_star + obj.lam / 2 * np.sum((start - optimum) ** 2)
            rate = 1 - 1 / math.sqrt(kappa)
            gaps = np.array(values) - f_star
            assert np.all(gaps <= rate ** np.arange(len(gaps)) * phi0 + 1e-12 * abs(f_star))
            # the derived bound ||grad F(y_k)|| <= 3 sqrt(2) kappa (1-q)^((k-1)/2) g_0
            k = np.arange(1, len(norms) + 1)
            assert np.all(norms <= 3 * math.sqrt(2) * kappa * rate ** ((k - 1) / 2) * g0)
            # and _accelerated itself stops at that same step
            _, norm, steps = accelerated.accelerated_phase(obj, tau, start, obj.gradient(start))
            assert norm <= tau and steps == needed


def test_budget_formula_limits():
    assert accelerated.accelerated_budget(100.0, 1.0, 2.0) == 0  # already certified
    assert accelerated.accelerated_budget(1.0, 1.0, 1e-9) == 2  # kappa = 1: one exact step
    b = accelerated.accelerated_budget(1e4, 1e3, 1e-8)
    expected = 1 + (math.log(18) + 2 * math.log(1e4) + 2 * math.log(1e11)) / -math.log(0.99)
    assert b == math.ceil(expected) + 1
    assert accelerated.accelerated_budget(1e4, 1e300, 1e-300) < 10**6  # no overflow
    with pytest.raises(ValueError):
        accelerated.accelerated_budget(math.inf, 1.0, 1e-9)


def test_failed_certificate_message_is_the_same_whatever_the_data():
    """tau below float64's floor: impossible to certify; the message has no number."""
    messages = []
    for n in (30, 70):
        rng = np.random.default_rng(n)
        X = _rows(rng, n, 3)
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        obj = PerturbedGLMObjective(X, y, LogisticLoss(), 40.0, rng.normal(size=3))
        with pytest.raises(CertificateError) as caught:
            solve(obj, 1e-300, method="lbfgs", max_iter=1)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] == solvers.CERTIFICATE_MESSAGE
    assert not any(ch.isdigit() for ch in messages[0])


def test_a_broken_fast_phase_falls_back_to_the_provable_one(monkeypatch):
    """A linear-algebra failure in Newton (rounding on an ill-conditioned Hessian) is not
    an error after the charge: the provable phase certifies from the start."""

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(solvers, "_newton_exact", broken)
    rng = np.random.default_rng(1)
    X = _rows(rng, 300, 5)
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 1.0, rng.normal(size=5))
    res = solve(obj, 1e-8)
    assert res.method == "accelerated" and obj.gradient_norm(res.theta) <= 1e-8


def test_row_source_objective_certifies_through_the_provable_phase(monkeypatch):
    """In memory through the row kernels (smoothness from the public row bound)."""
    from dpconvex.data.sources import InMemoryRows

    monkeypatch.setattr(solvers, "POLISH_STEPS", 0)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 6))
    y = np.where(rng.random(400) < 0.5, 1.0, -1.0)
    source = InMemoryRows.from_raw(
        X, y, LogisticLoss(), row_norm="normalize", row_bound=1.0, fit_intercept=True
    )
    b = rng.normal(size=7)
    obj = source.objective(ClippedLoss(LogisticLoss(), math.sqrt(2)), 0.8, b)
    assert obj.smoothness() == pytest.approx(0.25 * 400 * 2 + 0.8)
    res = solve(obj, 1e-7, method="lbfgs", max_iter=1)
    assert res.method == "accelerated" and res.grad_norm <= 1e-7
    design = PerturbedGLMObjective(source.design(), y, LogisticLoss(), 0.8, b)
    assert design.gradient_norm(res.theta) <= 1.0001e-7


@pytest.mark.parametrize("polish", [30, 0])
def test_estimator_with_max_iter_one_fits(monkeypatch, polish):
    """The review's reproducer: max_iter=1 with L-BFGS raised CertificateError after the
    budget was charged; now it fits, by the Newton polish's own steps or (polish off) the
    provable phase, and the point it releases is certified."""
    from dpconvex import DPLogisticRegression

    monkeypatch.setattr(solvers, "POLISH_STEPS", polish)
    results = []
    original = solvers.solve

    def spy(*args, **kwargs):
        results.append(original(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(sys.modules["dpconvex.mechanisms.amp"], "solve", spy)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    model = DPLogisticRegression(method="amp", max_iter=1, solver="lbfgs", random_state=0)
    model.fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    (res,) = results
    assert res.grad_norm <= model.mechanism_params_["tau"]
    assert (res.method == "accelerated") is (polish == 0)


# --- item 11: the clip is skipped only when it cannot bind -------------------------------


@pytest.mark.parametrize(
    "loss", [LogisticLoss(), HuberLoss(0.5), SmoothedHingeLoss(), HuberLoss(2.0)]
)
def test_base_derivatives_never_exceed_their_declared_bound(loss):
    """The exact skip relies on |f'| <= derivative_bound in float64, at any margin."""
    u = np.concatenate([np.linspace(-1e3, 1e3, 20001), [-1e300, 1e300, -745.0, 745.0]])
    for label in (-1.0, 1.0):
        y = np.full_like(u, label)
        assert np.all(np.abs(loss.derivative(u, y)) <= loss.derivative_bound)


@pytest.mark.parametrize("loss", [HuberLoss(0.5), LogisticLoss(), SmoothedHingeLoss()])
def test_rows_a_rounding_error_above_the_bound_get_no_gradient_above_c(loss):
    """kappa_i in ((1 - 1e-12) sup|f'|, sup|f'|): rows 1e-13 above R, C = sup|f'| R, and
    margins where |f'| = sup|f'| (Huber residuals beyond h; logistic and hinge margins
    far below 0). Before, the clip was skipped there and |f'| ||x_i|| exceeded C."""
    rng = np.random.default_rng(4)
    R = 1.0
    X = _rows(rng, 200, 5, norm=R * (1 + 1e-13))
    C = loss.derivative_bound * R
    theta = rng.normal(size=5) * 1e4  # margins of size ~1e4: |f'| at its supremum
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    obj = PerturbedGLMObjective(X, y, ClippedLoss(loss, C), 1.0)
    d = obj.derivatives(theta)
    kappa = C / obj.row_norms
    assert np.all(kappa < loss.derivative_bound)  # the case: within 1e-12 of the bound
    assert np.any(np.abs(loss.derivative(X @ theta, y)) > kappa)  # the clip binds somewhere
    assert np.all(np.abs(d) <= kappa)  # exact: the clipped derivative
    assert np.all(np.abs(d) * obj.row_norms <= C * (1 + 4e-16))
    # the gradient summed over rows agrees with the per-row clipped derivatives
    np.testing.assert_allclose(obj.gradient(theta), X.T @ d + obj.lam * theta, rtol=1e-12)


def test_row_kernels_clip_rows_a_rounding_error_above_the_bound():
    """The out-of-core / in-memory row kernels take the same route (clipping_kappa)."""
    from dpconvex.data.kernels import RowChunk

    rng = np.random.default_rng(5)
    X = _rows(rng, 100, 4, norm=1 + 1e-13)
    y = rng.normal(size=100) * 1e4  # residuals beyond h
    rows = {"row_norm": None, "row_bound": 1.0, "fit_intercept": False, "intercept_scaling": 1}
    chunk = RowChunk(X, y, ClippedLoss(HuberLoss(0.5), 0.5), rows)
    assert isinstance(chunk.loss, RarelyClippedLoss)
    d = chunk.loss.derivative(chunk.times(np.zeros(4)), *chunk.args)
    assert np.all(np.abs(d) <= chunk.args[1]) and np.all(
        np.abs(d) * chunk.norms <= 0.5 * (1 + 4e-16)
    )


@pytest.mark.parametrize(
    ("base", "binary"),
    [(LogisticLoss(), True), (HuberLoss(0.5), False), (SmoothedHingeLoss(), True)],
)
def test_rarely_clipped_loss_is_the_clipped_loss(base, binary):
    """Value, derivative and curvature equal ClippedLoss's, where the clip binds and not."""
    rng = np.random.default_rng(6)
    u = np.concatenate([rng.normal(size=500) * 3, rng.normal(size=500) * 100])
    y = np.where(rng.random(1000) < 0.5, 1.0, -1.0) if binary else rng.normal(size=1000)
    kappa = base.derivative_bound * (1 - rng.uniform(0, 1e-12, 1000))
    kappa[:10] = base.derivative_bound * 0.3  # some rows clipped well inside
    clipped = ClippedLoss(base, 1.0)
    fast = RarelyClippedLoss(clipped)
    np.testing.assert_array_equal(fast.derivative(u, y, kappa), clipped.derivative(u, y, kappa))
    np.testing.assert_allclose(fast.value(u, y, kappa), clipped.value(u, y, kappa), rtol=1e-12)
    np.testing.assert_array_equal(
        fast.second_derivative(u, y, kappa) > 0, clipped.second_derivative(u, y, kappa) > 0
    )


def test_clipping_route_is_exact_at_the_bound():
    loss = ClippedLoss(LogisticLoss(), 1.0)
    assert clipping_kappa(loss, np.array([1.0, 0.5]))[1] is None  # kappa >= 1: base loss
    route, kappa = clipping_kappa(loss, np.array([1.0 + 1e-15, 0.5]))
    assert isinstance(route, RarelyClippedLoss) and kappa is not None
    route, _ = clipping_kappa(loss, np.array([2.0]))
    assert type(route) is ClippedLoss


# --- the DP-SCO solver --------------------------------------------------------------------


def test_sco_solver_budget_overrides_a_small_max_iter_and_covers_the_run():
    """certified_minimize runs to its proven budget whatever max_iter (max_iter=2 failed
    before); the budget is at least the iterations a long run needs."""
    from dpconvex.optim.accelerated import certified_budget
    from dpconvex.sco import certified_minimize
    from dpconvex.sco.sets import L2Ball

    rng = np.random.default_rng(7)
    A = rng.normal(size=(6, 6))
    Q = A @ A.T + 0.05 * np.eye(6)
    b = rng.normal(size=6) * 3
    L, mu = float(np.linalg.eigvalsh(Q).max()), 0.05
    ball = L2Ball(6, 1.0)
    grad = lambda w: Q @ w - b  # noqa: E731
    kw = {"smoothness": L, "strong_convexity": mu, "accuracy": 1e-8}
    cert = certified_minimize(grad, ball.project, np.zeros(6), max_iter=2, check_every=1, **kw)
    assert cert.gap_bound <= 1e-8
    x0 = np.zeros(6)
    budget = certified_budget(
        grad(x0), x0, ball.project(x0 - grad(x0) / L), gradient_scale=1.0, **kw
    )
    assert cert.n_iter - 1 <= budget  # certified at x_k, k = n_iter - 1
    with pytest.raises(CertificateError) as caught:  # the allowance alone exceeds it
        certified_minimize(grad, ball.project, np.zeros(6), max_iter=2, **{**kw, "accuracy": 1e-40})
    assert not any(ch.isdigit() for ch in str(caught.value))
