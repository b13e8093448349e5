"""Algorithm 1 engine: batches, prox, clipping, sensitivity, refusals, Monte Carlo of a run."""

import math

import numpy as np
import pytest

from dpconvex.bcd import (
    BlockSpec,
    HiddenStateDpEvent,
    HiddenStateUnsoundError,
    ImplicitStepError,
    LeastSquaresProblem,
    MbcdCompositionDpEvent,
    MbcdProblem,
    Prox,
    batch_count,
    clipped_gradient_sum,
    dp_mbcd,
    implicit_least_squares_step,
    mbcd,
    run_events,
    secret_batches,
)
from dpconvex.bcd.engine import _block_step
from dpconvex.release import Release


class LinearProblem(MbcdProblem):
    """One scalar block with loss -y_i theta per example: a 1-D quadratic with a ridge."""

    has_hidden_blocks = False

    def __init__(self, y, *, clip=1.0, ridge=0.0, prox_ridge=0.0):
        self.y = np.asarray(y, dtype=float)
        self.n_examples = self.y.size
        self.blocks = (
            BlockSpec("t", clip=clip, smoothness=0.0, ridge=ridge, prox=Prox(ridge=prox_ridge)),
        )

    def init(self, rng):
        return {"t": np.zeros((1, 1))}

    def gradient_factors(self, name, params, batch):
        return -self.y[batch][:, None], np.ones((batch.size, 1))


class TwoBlockProblem(LinearProblem):
    def __init__(self, y):
        super().__init__(y, ridge=0.5)
        self.blocks = (self.blocks[0], BlockSpec("s", clip=1.0, smoothness=1.0, ridge=0.5))

    def init(self, rng):
        return {"t": np.zeros((1, 1)), "s": np.zeros((1, 1))}


# -- batches ----------------------------------------------------------------------------
def test_secret_batches_partition_with_capacity():
    rng = np.random.default_rng(0)
    n, b = 1003, 50
    batches = secret_batches(rng, n, b)
    assert len(batches) == batch_count(n, b) == math.ceil((n + 1) / b)
    allidx = np.concatenate(batches)
    assert np.array_equal(np.sort(allidx), np.arange(n))
    assert max(len(x) for x in batches) <= b
    with pytest.raises(ValueError, match="cannot hold"):
        secret_batches(rng, 101, 10, n_batches=10)


def test_position_of_an_example_is_uniform():
    rng = np.random.default_rng(1)
    n, b = 29, 10  # m = 3
    counts = np.zeros(3)
    for _ in range(3000):
        batches = secret_batches(rng, n, b)
        counts[[j for j, x in enumerate(batches) if 0 in x][0]] += 1
    assert np.all(np.abs(counts / 3000 - 1 / 3) < 0.04)


# -- prox ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "prox",
    [
        Prox(),
        Prox(ridge=0.7),
        Prox(l1=0.3),
        Prox(ridge=0.2, l1=0.3),
        Prox(constraint="nonnegative"),
        Prox(l1=0.1, constraint="nonnegative"),
        Prox(constraint="ball", radius=1.5),
        Prox(ridge=0.3, constraint="nonnegative-ball", radius=0.7),
    ],
)
def test_prox_is_nonexpansive_and_a_minimizer(prox):
    rng = np.random.default_rng(2)
    step = 0.4
    for _ in range(50):
        x, y = rng.normal(size=(2, 3, 4))
        tx, ty = prox(x, step), prox(y, step)
        assert np.linalg.norm(tx - ty) <= np.linalg.norm(x - y) * (1 + 1e-12)
    if prox.ridge and prox.constraint is None and not prox.l1:
        x, y = rng.normal(size=(2, 5))
        ratio = np.linalg.norm(prox(x, step) - prox(y, step)) / np.linalg.norm(x - y)
        assert ratio == pytest.approx(1 / (1 + step * prox.ridge))
    # prox(v) minimizes r(t) + ||t - v||^2 / (2 step) against random feasible points
    v = rng.normal(size=(3, 4))
    t = prox(v, step)

    def objective(z):
        feasible = True
        if prox.constraint in ("nonnegative", "nonnegative-ball"):
            feasible &= bool(np.all(z >= -1e-12))
        if prox.constraint in ("ball", "nonnegative-ball"):
            feasible &= bool(np.linalg.norm(z) <= prox.radius + 1e-12)
        if not feasible:
            return np.inf
        r = prox.ridge / 2 * np.sum(z**2) + prox.l1 * np.abs(z).sum()
        return r + np.sum((z - v) ** 2) / (2 * step)

    best = objective(t)
    assert np.isfinite(best)
    for _ in range(300):
        z = prox(t + 0.05 * rng.normal(size=t.shape), 1e-12 + 0.0)  # project only (tiny step)
        if prox.constraint is None:
            z = t + 0.05 * rng.normal(size=t.shape)
        assert objective(z) >= best - 1e-12


def test_prox_validation():
    with pytest.raises(ValueError):
        Prox(ridge=-1)
    with pytest.raises(ValueError):
        Prox(constraint="box")
    with pytest.raises(ValueError):
        Prox(constraint="ball")
    with pytest.raises(ValueError):
        Prox(l1=1.0, constraint="ball", radius=1.0)


# -- clipping and sensitivity -----------------------------------------------------------
def test_clipped_sum_equals_explicit_per_example_clipping():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(40, 3)) * 3, rng.normal(size=(40, 5))
    clip = 1.5
    ref = np.zeros((3, 5))
    for ai, bi in zip(a, b, strict=True):
        g = np.outer(ai, bi)
        ref += g * min(1.0, clip / np.linalg.norm(g))
        assert np.linalg.norm(g * min(1.0, clip / np.linalg.norm(g))) <= clip * (1 + 1e-12)
    np.testing.assert_allclose(clipped_gradient_sum(a, b, clip), ref, rtol=1e-12)


def test_one_step_moves_at_most_eta_c_over_b_when_an_example_is_added():
    """Assumption 4.4 as the accountant uses it: add/remove shift <= eta * C / b."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 4)) * 5
    T = rng.normal(size=(60, 2)) * 50
    problem = LeastSquaresProblem(X, T, row_bound=10.0, clip=0.7, ridge=0.3)
    blk = problem.blocks[0]
    params = {"W": rng.normal(size=(2, 4))}
    batch = np.arange(20)
    eta, b = 0.05, 25
    for extra in range(20, 60):
        moves = []
        for idx in (batch, np.append(batch, extra)):
            step = _block_step(
                problem, blk, params, idx, eta, b, np.random.default_rng(9), 0.01, 0.7
            )
            moves.append(step)
        assert np.linalg.norm(moves[0] - moves[1]) <= eta * 0.7 / b * (1 + 1e-9)


def test_implicit_step_closed_form_and_stability():
    rng = np.random.default_rng(5)
    W = rng.normal(size=(3, 6))
    X = rng.normal(size=(40, 6)) / 3
    U = rng.normal(size=(40, 3)) / 3
    eta, gamma, b = 2.0, 1.0, 40
    # no clipping active: the corrected closed form of the paper's variant
    V, gnorm, _ = implicit_least_squares_step(
        W, X, U, gamma=gamma, step=eta, clip=1e6, batch_size=b, tol=1e-10
    )
    closed = (W + eta * gamma * U.T @ X / b) @ np.linalg.inv(np.eye(6) + eta * gamma * X.T @ X / b)
    np.testing.assert_allclose(V, closed, rtol=1e-8, atol=1e-10)
    assert gnorm <= 1e-10
    # clipping active: adding one example moves the certified minimizer by <= eta (C/b + 2 tol)
    clip, tol = 0.05, 1e-6
    base, _, _ = implicit_least_squares_step(
        W, X, U, gamma=gamma, step=eta, clip=clip, batch_size=b, tol=tol
    )
    for _ in range(10):
        x_new, u_new = rng.normal(size=(1, 6)) * 3, rng.normal(size=(1, 3)) * 30
        more, _, _ = implicit_least_squares_step(
            W,
            np.vstack([X, x_new]),
            np.vstack([U, u_new]),
            gamma=gamma,
            step=eta,
            clip=clip,
            batch_size=b,
            tol=tol,
        )
        assert np.linalg.norm(more - base) <= eta * (clip / b + 2 * tol) * (1 + 1e-9)
    with pytest.raises(ImplicitStepError):
        implicit_least_squares_step(
            W, X, U * 100, gamma=gamma, step=eta, clip=clip, batch_size=b, tol=1e-14, max_iter=2
        )


# -- refusals ------------------------------------------------------------------------------
def test_hidden_state_refusals_point_to_composition():
    y = np.linspace(-1, 1, 30)
    run = dict(batch_size=10, epochs=2, step_size=0.1, noise=0.01, accountant="hidden-state")
    with pytest.raises(HiddenStateUnsoundError, match="only convex.*composition"):
        dp_mbcd(LinearProblem(y), **run)  # merely convex: no contraction
    with pytest.raises(HiddenStateUnsoundError, match="coupled.*composition"):
        dp_mbcd(TwoBlockProblem(y), **run)
    hidden = LinearProblem(y, ridge=0.5)
    hidden.has_hidden_blocks = True
    with pytest.raises(HiddenStateUnsoundError, match="hidden blocks"):
        dp_mbcd(hidden, **run)
    uncertified = LinearProblem(y, ridge=0.5)
    uncertified.blocks = (BlockSpec("t", clip=1.0, ridge=0.5),)
    with pytest.raises(HiddenStateUnsoundError, match="smoothness"):
        dp_mbcd(uncertified, **run)
    steep = LinearProblem(y, ridge=0.5)
    steep.blocks = (BlockSpec("t", clip=1.0, smoothness=100.0, ridge=0.5),)
    with pytest.raises(HiddenStateUnsoundError, match="too large"):
        dp_mbcd(steep, **{**run, "kappa": 5.0})
    # the same runs are fine under composition
    rel = dp_mbcd(TwoBlockProblem(y), **{**run, "accountant": "composition"}, random_state=0)
    assert isinstance(rel.event, MbcdCompositionDpEvent) and rel.info["hidden_state_event"] is None
    assert rel.event.n_blocks == 2


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"accountant": "hidden"}, ValueError),
        ({"delta": 1.0}, ValueError),
        ({"delta": 0.0}, ValueError),
        ({"step_size": -1.0}, ValueError),
        ({"noise": float("nan")}, ValueError),
        ({"noise": 0.0}, ValueError),
        ({"noise": np.full((2, 3), 0.01)}, ValueError),  # wrong shape (m = 4)
        ({"epochs": 0}, ValueError),
        ({"batch_size": 0}, ValueError),
    ],
)
def test_bad_arguments_are_refused(kwargs, error):
    run = dict(batch_size=10, epochs=2, step_size=0.1, noise=0.01)
    with pytest.raises(error):
        dp_mbcd(LinearProblem(np.linspace(-1, 1, 30), ridge=0.5), **{**run, **kwargs})


def test_bad_data_is_refused():
    with pytest.raises(ValueError, match="NaN"):
        LeastSquaresProblem(np.array([[1.0, np.nan]]), [1.0])
    with pytest.raises(ValueError, match="rows"):
        LeastSquaresProblem(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError, match="2-dimensional"):
        LeastSquaresProblem(np.ones(3), np.ones(3))


# -- a run, its events and its law ----------------------------------------------------------
def test_release_carries_both_events_side_by_side():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(500, 3))
    y = X @ np.array([0.5, -0.2, 0.1]) + 0.05 * rng.normal(size=500)
    problem = LeastSquaresProblem(X, y, row_bound=3.0, clip=1.0, prox=Prox(ridge=0.5))
    rel = dp_mbcd(
        problem,
        batch_size=50,
        epochs=20,
        step_size=0.1,
        noise=0.002,
        accountant="hidden-state",
        delta=1e-5,
        random_state=0,
    )
    assert isinstance(rel, Release) and isinstance(rel.event, HiddenStateDpEvent)
    eps = rel.info["epsilon"]
    assert eps["hidden_state_rdp"] < eps["composition_rdp"]
    assert eps["composition_pld"] <= eps["composition_rdp"]
    comp, hidden = run_events(problem, batch_size=50, epochs=20, step_size=0.1, noise=0.002)
    assert hidden == rel.event and comp == rel.info["composition_event"]
    assert hidden.composition() == comp
    # the private fit is close to the non-private one
    W = mbcd(problem, batch_size=50, epochs=20, step_size=0.1, random_state=0)["W"]
    assert np.linalg.norm(rel.theta["W"] - W) < 0.2
    assert rel.theta["W"] is not problem.init(None)["W"]


def test_monte_carlo_law_of_a_run_matches_the_exact_model():
    """The engine runs exactly the linear-Gaussian chain the 1-D exact test prices."""
    n, b, K, eta, lam, level, y0 = 7, 4, 3, 0.1, 0.5, 0.02, 0.8
    y = np.zeros(n + 1)
    y[-1] = y0  # D' = D + one example with gradient -y0 (others contribute nothing)
    problem = LinearProblem(y, prox_ridge=lam)
    m = batch_count(n, b)  # the run on D' uses the batches of D's public n
    runs = 3000
    finals = np.empty(runs)
    rng = np.random.default_rng(11)
    for r in range(runs):
        rel = dp_mbcd(
            problem,
            batch_size=b,
            epochs=K,
            step_size=eta,
            noise=level,
            n_batches=m,
            random_state=rng,
        )
        finals[r] = rel.theta["t"][0, 0]
    L = 1 / (1 + eta * lam)
    T = K * m
    var = sum(L ** (2 * (T - 1 - t)) * L**2 * 2 * eta * level for t in range(T))
    means = [sum(L ** (T - 1 - (k * m + j)) * L * eta * y0 / b for k in range(K)) for j in range(m)]
    mix_mean = np.mean(means)
    mix_var = var + np.var(means)
    se = math.sqrt(mix_var / runs)
    assert abs(finals.mean() - mix_mean) < 4 * se
    assert finals.var() == pytest.approx(mix_var, rel=0.1)
