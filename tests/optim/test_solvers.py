"""Certified solvers: the certificate really bounds the distance to theta^P.

Redberg, Koskela & Wang (arXiv 2401.00583), Thm 4.1.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from dpconvex.losses import ClippedLoss, HuberLoss, LogisticLoss, SquaredLoss
from dpconvex.optim import CertificateError, PerturbedGLMObjective, solve


def _problem(rng, n=800, d=12, binary=True):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X = np.hstack([X, np.ones((n, 1))])
    w = rng.normal(size=d + 1)
    if binary:
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-3 * X @ w)), 1.0, -1.0)
    else:
        y = np.clip(X @ w / 3 + rng.normal(0, 0.2, n), -1, 1)
    return X, y


@pytest.mark.parametrize("method", ["auto", "lbfgs", "newton", "svrg"])
@pytest.mark.parametrize(
    ("base", "binary"), [(LogisticLoss(), True), (SquaredLoss(), False), (HuberLoss(0.3), False)]
)
def test_certificate_bounds_distance_to_exact_minimizer(method, base, binary):
    rng = np.random.default_rng(3)
    X, y = _problem(rng, binary=binary)
    lam, tau = 2.0, 0.01
    for _ in range(3):
        b = rng.normal(0, 5.0, X.shape[1])
        loss = ClippedLoss(base, 0.7)  # clipping active for every loss here
        res = solve(PerturbedGLMObjective(X, y, loss, lam, b), tau, method=method, rng=rng)
        assert res.grad_norm <= tau
        # theta^P for the same b, to high precision (within 1e-6/lam of it)
        exact = solve(PerturbedGLMObjective(X, y, loss, lam, b), 1e-6)
        assert np.linalg.norm(res.theta - exact.theta) <= (tau + 1e-6) / lam
        # the reported norm is the float64 norm on the full objective
        check = PerturbedGLMObjective(X, y, loss, lam, b)
        assert check.gradient_norm(res.theta) == pytest.approx(res.grad_norm, rel=1e-12)


def test_sparse_and_dense_agree():
    rng = np.random.default_rng(4)
    X, y = _problem(rng)
    X[np.abs(X) < 0.2] = 0.0
    b = rng.normal(0, 3, X.shape[1])
    dense = solve(PerturbedGLMObjective(X, y, LogisticLoss(), 1.5, b), 1e-7)
    sparse = solve(PerturbedGLMObjective(sp.csr_matrix(X), y, LogisticLoss(), 1.5, b), 1e-7)
    np.testing.assert_allclose(dense.theta, sparse.theta, atol=2e-7)


def test_uncertified_solve_raises_and_returns_nothing():
    """Below float64's floor (tau = 1e-300) no method certifies: a fixed message, no number."""
    rng = np.random.default_rng(5)
    X, y = _problem(rng, n=200)
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 60.0, rng.normal(0, 1, X.shape[1]))
    with pytest.raises(CertificateError, match="nothing is released") as caught:
        solve(obj, 1e-300, method="lbfgs", max_iter=2)
    assert not any(ch.isdigit() for ch in str(caught.value))
    with pytest.raises(CertificateError):
        solve(obj, 1e-300, method="svrg", max_iter=1, rng=rng)


@pytest.mark.parametrize("polish", [True, False])
@pytest.mark.parametrize("method", ["lbfgs", "svrg", "newton", "auto"])
def test_a_small_max_iter_certifies(monkeypatch, method, polish):
    """max_iter=1 raised CertificateError before. Now the Newton polish gets its own
    steps, and without it (POLISH_STEPS = 0) the provable phase certifies."""
    import dpconvex.optim.solvers as solvers

    if not polish:
        monkeypatch.setattr(solvers, "POLISH_STEPS", 0)
    rng = np.random.default_rng(5)
    X, y = _problem(rng, n=2000)
    b = rng.normal(0, 1, X.shape[1])
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 0.6, b)
    res = solve(obj, 1e-6, method=method, max_iter=1, rng=rng)
    assert res.grad_norm <= 1e-6 and (res.method == "accelerated") is not polish
    fresh = PerturbedGLMObjective(X, y, LogisticLoss(), 0.6, b)
    assert fresh.gradient_norm(res.theta) <= 1e-6


def test_svrg_counts_gradient_evaluations():
    rng = np.random.default_rng(6)
    X, y = _problem(rng, n=3000)
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, rng.normal(0, 2, X.shape[1]))
    res = solve(obj, 0.01, method="svrg", rng=rng, batch_size=8)
    # each epoch: one full gradient (n) and 2 per sampled example (2 * (n // B) * B)
    assert res.grad_evals >= 3000 * res.n_iter
    assert res.grad_evals == obj.grad_evals


def test_bad_solver_arguments():
    rng = np.random.default_rng(7)
    X, y = _problem(rng, n=50)
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 1.0)
    with pytest.raises(ValueError, match="solver"):
        solve(obj, 0.01, method="sgd")
    with pytest.raises(ValueError, match="tau"):
        solve(obj, 0.0)


@pytest.mark.parametrize("order", ["C", "F"])
def test_gram_matrix_reads_either_layout_in_place(order):
    """A^T A by a rank-k update for row- and column-major blocks (Parquet chunks are F)."""
    from dpconvex.optim.objective import gram_matrix

    a = np.asarray(np.random.default_rng(3).normal(size=(257, 9)), order=order)
    got = gram_matrix(a)
    np.testing.assert_allclose(got, a.T @ a, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got, got.T)
    assert gram_matrix(a[:0]).shape == (9, 9)


@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_matches_hessian_vector_products_and_finite_differences(sparse):
    rng = np.random.default_rng(11)
    X, y = _problem(rng, n=300, d=6)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0))
    obj = PerturbedGLMObjective(X, y, ClippedLoss(LogisticLoss(), 0.5), 1.5, rng.normal(size=7))
    theta, v = rng.normal(size=7), rng.normal(size=7)
    obj.HESSIAN_BLOCK_ROWS = 64  # several blocks
    grad, hess = obj.gradient_hessian(theta)
    np.testing.assert_allclose(grad, obj.gradient(theta), rtol=1e-14)
    np.testing.assert_allclose(hess, hess.T, atol=1e-12)
    np.testing.assert_allclose(hess @ v, obj.hessian_vector(theta, v), rtol=1e-10, atol=1e-10)
    h = 1e-6  # central difference of the gradient, independent of the Hessian code
    fd = (obj.gradient(theta + h * v) - obj.gradient(theta - h * v)) / (2 * h)
    np.testing.assert_allclose(hess @ v, fd, rtol=1e-5, atol=1e-6)


def test_exact_newton_certifies_without_a_second_evaluation():
    """auto/newton use the d x d Hessian for small d; the norm returned is the certificate."""
    rng = np.random.default_rng(5)
    X, y = _problem(rng, n=2000, d=20)
    b = rng.normal(0, 5.0, X.shape[1])
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, b)
    res = solve(obj, 1e-9, method="auto")
    assert res.method == "newton" and res.n_iter <= 15
    fresh = PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, b)
    assert fresh.gradient_norm(res.theta) == pytest.approx(res.grad_norm, rel=1e-6, abs=1e-13)
    assert res.grad_norm <= 1e-9
    ref = solve(PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, b), 1e-9, method="lbfgs")
    assert np.linalg.norm(res.theta - ref.theta) <= 2e-9 / 2.0


def test_warm_start_from_a_subsample_still_certifies_the_full_objective(monkeypatch):
    import dpconvex.optim.solvers as solvers

    monkeypatch.setattr(solvers, "WARM_START_ROWS", 400)
    rng = np.random.default_rng(8)
    X, y = _problem(rng, n=4000, d=10)
    b = rng.normal(0, 5.0, X.shape[1])
    obj = PerturbedGLMObjective(X, y, ClippedLoss(LogisticLoss(), 0.8), 2.0, b)
    sub = obj.subsample(400)
    assert sub.n == 400 and sub.lam == pytest.approx(0.2) and np.allclose(sub.b, b / 10)
    res = solve(obj, 1e-9)
    assert res.grad_norm <= 1e-9
    ref = solve(PerturbedGLMObjective(X, y, ClippedLoss(LogisticLoss(), 0.8), 2.0, b), 1e-9,
                method="lbfgs")  # fmt: skip
    assert np.linalg.norm(res.theta - ref.theta) <= 2e-9 / 2.0


@pytest.mark.parametrize("sparse", [False, True])
def test_subsampled_hessian_is_the_rescaled_hessian_of_every_kth_row(sparse):
    """Independent check: X_S^T diag(f'') X_S (n/|S|) + lam I for S = rows 0, k, 2k, ..."""
    rng = np.random.default_rng(12)
    X, y = _problem(rng, n=1003, d=5)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0))
    loss = ClippedLoss(LogisticLoss(), 0.7)
    obj = PerturbedGLMObjective(X, y, loss, 1.5)
    theta = rng.normal(size=6)
    rows = np.arange(0, 1003, 7)
    sub = PerturbedGLMObjective(X[rows], y[rows], loss, 1.5 * len(rows) / 1003)
    expected = sub.hessian(theta) * 1003 / len(rows)
    np.testing.assert_allclose(obj.hessian(theta, stride=7), expected, rtol=1e-12, atol=1e-12)
    grad, hess = obj.gradient_hessian(theta, stride=7)
    np.testing.assert_allclose(grad, obj.gradient(theta), rtol=1e-14)  # never subsampled
    np.testing.assert_allclose(hess, expected, rtol=1e-12, atol=1e-12)
    assert obj.hessian(theta, stride=1) == pytest.approx(obj.hessian(theta), rel=1e-15)


@pytest.mark.parametrize(("out_of_core", "held"), [(False, False), (True, False), (True, True)])
def test_first_step_on_a_subsampled_hessian_then_exact_ones(monkeypatch, out_of_core, held):
    """From the warm start the first Hessian comes from a subsample of rows (in memory, or
    out of core with the rows held in the workers' memory, the start's own, rescaled; out
    of core with passes that read the files, every k-th row of the first pass), every
    later one from all rows; the point returned is certified on the full objective."""
    import dpconvex.optim.solvers as solvers

    monkeypatch.setattr(solvers, "WARM_START_ROWS", 500)
    rng = np.random.default_rng(9)
    X, y = _problem(rng, n=6000, d=10)
    b = rng.normal(0, 5.0, X.shape[1])
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, b)
    obj.passes_are_expensive = out_of_core
    obj.rows_held = held
    strides, passes = [], []
    original, original_pass = PerturbedGLMObjective.hessian, PerturbedGLMObjective.gradient_hessian

    def spy(self, theta, stride=1):
        if self.n == 6000:
            strides.append(stride)
        return original(self, theta, stride)

    def spy_pass(self, theta, hessian=True, stride=1):
        if self.n == 6000:
            passes.append(hessian)
        return original_pass(self, theta, hessian, stride)

    monkeypatch.setattr(PerturbedGLMObjective, "hessian", spy)
    monkeypatch.setattr(PerturbedGLMObjective, "gradient_hessian", spy_pass)
    res = solve(obj, 1e-9)
    if out_of_core and not held:
        assert strides[0] == min(solvers.FIRST_HESSIAN_MAX_STRIDE, 6000 // 500) == 8
        assert len(strides) >= 2 and set(strides[1:]) == {1}
    else:  # the first pass forms no Hessian: the subsample's is used
        assert passes[0] is False and len(strides) >= 1 and set(strides) == {1}
    assert res.method == "newton" and res.grad_norm <= 1e-9
    assert obj.gradient_norm(res.theta) == pytest.approx(res.grad_norm, rel=1e-6, abs=1e-13)
    ref = solve(PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, b), 1e-9, method="lbfgs")
    assert np.linalg.norm(res.theta - ref.theta) <= 2e-9 / 2.0


def test_in_memory_warm_start_hessian_is_the_subsample_hessian_rescaled(monkeypatch):
    """Independent check: (n/m) times the Hessian of m evenly spaced rows at the start
    (computed here from scratch) is close to it, and near the full Hessian there."""
    import dpconvex.optim.solvers as solvers

    monkeypatch.setattr(solvers, "WARM_START_ROWS", 500)
    rng = np.random.default_rng(10)
    X, y = _problem(rng, n=6000, d=10)
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, rng.normal(0, 5.0, 11))
    start, stride, first = solvers._warm_start(obj, np.zeros(11))
    assert stride == 1 and first.shape == (11, 11)
    rows = np.linspace(0, 5999, 500).astype(int)
    sub = PerturbedGLMObjective(X[rows], y[rows], LogisticLoss(), 2.0 * 500 / 6000)
    expected = sub.hessian(start) * 6000 / 500
    # formed a Newton step or two before the start: close (measured 4.9 %), not equal
    assert np.linalg.norm(first - expected, 2) <= 0.1 * np.linalg.norm(expected, 2)
    full = obj.hessian(start)
    assert np.linalg.norm(first - full, 2) <= 0.2 * np.linalg.norm(full, 2)  # 8.6 %
    assert not np.allclose(first, full, rtol=1e-3)  # not formed from all rows
    g = obj.gradient(start)  # a Newton step on it cuts the full gradient (to 11 %)
    assert np.linalg.norm(obj.gradient(start - np.linalg.solve(first, g))) <= 0.2 * np.linalg.norm(
        g
    )


def test_out_of_core_newton_refreshes_a_kept_hessian_once_convergence_turns_linear(
    monkeypatch,
):
    """One pass per step (as out of core), on Adult's one-hot rows from a small warm start:
    whenever a step on a kept Hessian cut ||g|| no more than the step before it, the next
    pass brings a new exact Hessian (so the following step is quadratic again)."""
    import dpconvex.optim.solvers as solvers
    from dpconvex.datasets import load_adult
    from dpconvex.mechanisms import add_intercept, transform_rows

    X_train, _, y_train, _ = load_adult().split(0.2, seed=0)
    X = add_intercept(transform_rows(np.asarray(X_train, dtype=float), "normalize", 1.0), 1.0)
    y = np.where(np.asarray(y_train) == 1, 1.0, -1.0)
    obj = PerturbedGLMObjective(
        X, y, LogisticLoss(), 2.65, np.random.default_rng(0).normal(0, 10, 105)
    )
    monkeypatch.setattr(solvers, "WARM_START_ROWS", 1000)
    obj.passes_are_expensive = True  # as out of core: the first pass forms a subsampled Hessian
    evaluations = []  # (Hessian stride or 0, ||g||) per pass
    original = obj.gradient_hessian

    def spy(theta, hessian=True, stride=1):
        out = original(theta, hessian, stride)
        evaluations.append((stride if hessian else 0, float(np.linalg.norm(out[0]))))
        return out

    obj.gradient_hessian = spy
    start, stride, first = solvers._warm_start(obj, np.zeros(105))
    assert stride == 8 and first is None
    theta, passes, norm, _ = solvers._newton_exact(obj, 1e-7, start, 50, one_pass=True,
                                                first_stride=stride)  # fmt: skip
    assert norm <= 1e-7 and obj.gradient_norm(theta) == pytest.approx(norm, rel=1e-6)
    strides, norms = zip(*evaluations, strict=True)
    assert all(b < a for a, b in zip(norms, norms[1:], strict=False))  # every step accepted
    assert strides[0] == 8 and strides[1] == 1  # the subsampled Hessian is replaced at once
    linear_steps = 0
    for j in range(1, len(norms) - 1):  # the step from point j to j + 1
        kept = strides[j] != 1  # the step used a Hessian from an earlier point
        slower = norms[j + 1] / norms[j] >= norms[j] / norms[j - 1]
        # ... and the pass at j + 1 did not already bring a new one
        if kept and slower and strides[j + 1] != 1 and j + 2 < len(norms):
            linear_steps += 1
            assert strides[j + 2] == 1, evaluations
    assert linear_steps >= 1, evaluations  # the rule was exercised
    assert passes <= 6


def test_bfgs_update_satisfies_the_secant_equation_and_stays_positive_definite():
    """Independent check of the formula: H+ s = y, symmetric, positive definite."""
    import dpconvex.optim.solvers as solvers

    rng = np.random.default_rng(13)
    A = rng.normal(size=(6, 6))
    hess = A @ A.T + np.eye(6)
    s = rng.normal(size=6)
    y = (hess + 0.3 * np.diag(rng.random(6))) @ s  # curvature grew along s: y^T s > 0
    new = solvers._bfgs_update(hess, s, y)
    np.testing.assert_allclose(new @ s, y, rtol=1e-10)
    np.testing.assert_allclose(new, new.T, atol=1e-12)
    assert np.linalg.eigvalsh(new).min() > 0
    assert np.linalg.matrix_rank(new - hess, tol=1e-9) == 2  # a rank-2 change
    assert solvers._bfgs_update(hess, s, -y) is hess  # y^T s <= 0: not a convex step


@pytest.mark.parametrize(
    ("cost", "first", "exact_expected"),
    [(5.0, "close", False), (5.0, "crude", True), (None, "close", True)],
)
def test_in_memory_newton_keeps_a_good_hessian_while_a_new_one_costs_more(
    cost, first, exact_expected
):
    """With a Hessian's cost in gradients (in memory), a given first Hessian that steps
    fast is kept, BFGS-updated, up to the certificate (no exact Hessian formed); a crude
    one (slow steps) is replaced; without a cost (out of core, where passes count) the
    given first Hessian is replaced at once. The certificate holds in every case."""
    import dpconvex.optim.solvers as solvers

    rng = np.random.default_rng(11)
    X, y = _problem(rng, n=6000, d=10)
    b = rng.normal(0, 5.0, 11)
    obj = PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, b)
    optimum = solve(PerturbedGLMObjective(X, y, LogisticLoss(), 2.0, b), 1e-10).theta
    start = optimum + 0.05 * rng.normal(size=11)
    hess = obj.hessian(start)
    given = hess * 1.001 if first == "close" else np.eye(11) * np.trace(hess) / 11
    exact = []
    original_pass, original_hessian = obj.gradient_hessian, obj.hessian

    def spy_pass(theta, hessian=True, stride=1):
        exact.append(hessian)
        return original_pass(theta, hessian, stride)

    def spy_hessian(theta, stride=1):
        exact.append(True)
        return original_hessian(theta, stride)

    obj.gradient_hessian, obj.hessian = spy_pass, spy_hessian
    theta, steps, norm, _ = solvers._newton_exact(
        obj, 1e-9, start, 50, one_pass=True, first_hessian=given, hessian_cost=cost
    )
    assert norm <= 1e-9 and obj.gradient_norm(theta) == pytest.approx(norm, rel=1e-6)
    assert any(exact) is exact_expected, exact
    assert steps <= 12
