"""Out-of-core fits on dask arrays agree with the in-memory ones and keep the same accounting."""

import json
from functools import partial

import numpy as np
import pytest

pytestmark = pytest.mark.dask  # pip install ".[dask]", then python -m pytest -m dask

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from dpconvex import DPLinearRegression, DPLogisticRegression  # noqa: E402
from dpconvex.data.kernels import chunk_scales  # noqa: E402
from dpconvex.losses import ClippedLoss, LogisticLoss  # noqa: E402
from dpconvex.mechanisms import add_intercept, amp, transform_rows  # noqa: E402
from dpconvex.optim import PerturbedGLMObjective  # noqa: E402
from dpconvex.scale import DaskRows  # noqa: E402
from dpconvex.scale.data import read_parquet, read_table, read_zarr, synthetic_glm  # noqa: E402
from dpconvex.scale.fit import cache_inputs, cache_rows  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6)) * rng.uniform(0.1, 4, (3000, 1))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=3000) > 0, 1, -1)
    return X, y


def test_objective_matches_in_memory(data):
    X, y = data
    rows = {
        "row_norm": "normalize",
        "row_bound": 1.0,
        "fit_intercept": True,
        "intercept_scaling": 1.0,
    }
    loss = ClippedLoss(LogisticLoss(), 0.6)
    b = np.random.default_rng(1).normal(size=7)
    Xt = add_intercept(transform_rows(X, "normalize", 1.0), 1.0)
    mem = PerturbedGLMObjective(Xt, y, loss, 2.0, b)
    big = DaskRows(
        da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700), **rows
    ).objective(loss, 2.0, b)
    theta, v = np.linspace(-1, 1, 7), np.linspace(2, -1, 7)
    fm, gm = mem.value_and_gradient(theta)
    fb, gb = big.value_and_gradient(theta)
    assert fb == pytest.approx(fm, rel=1e-12)
    np.testing.assert_allclose(gb, gm, rtol=1e-11)
    np.testing.assert_allclose(
        big.hessian_vector(theta, v), mem.hessian_vector(theta, v), rtol=1e-11
    )
    assert big.passes == 2


def test_partial_sums_added_on_the_client_or_in_a_tree_agree(data, monkeypatch):
    import dpconvex.data.dask_rows as source

    X, y = data
    rows = DaskRows(
        da.from_array(X, chunks=(700, 6)),
        da.from_array(y, chunks=700),
        row_norm="clip",
        row_bound=2.0,
        fit_intercept=False,
    )

    def sums(xb, yb, w):
        return np.concatenate([w * xb.sum(axis=0), [yb.sum(), len(yb)]])

    here = rows.reduce(sums, 8, 2.0)
    monkeypatch.setattr(source, "CLIENT_SUM_BYTES", 0)  # every pass now sums in a tree
    tree = rows.reduce(sums, 8, 2.0)
    expected = np.concatenate([2.0 * X.sum(axis=0), [y.sum(), len(y)]])
    np.testing.assert_allclose(here, expected, rtol=1e-12)
    np.testing.assert_allclose(tree, expected, rtol=1e-12)
    assert here.shape == tree.shape == (8,) and rows.passes == 2


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("block_rows", [4096, 64])
def test_one_pass_hessian_matches_in_memory_for_either_chunk_layout(
    data, order, block_rows, monkeypatch
):
    """Gradient and Hessian of one pass equal the in-memory ones, whatever the chunks'
    memory layout (Parquet chunks arrive column-major, Zarr's row-major) and whether the
    kernels take a chunk as one block or several."""
    import dpconvex.data.kernels as row_kernels

    monkeypatch.setattr(row_kernels, "BLOCK_ROWS", block_rows)
    X, y = data
    rows = {"row_norm": "clip", "row_bound": 2.0, "fit_intercept": True, "intercept_scaling": 1.0}
    Xt = add_intercept(transform_rows(X, "clip", 2.0), 1.0)
    mem = PerturbedGLMObjective(Xt, y, LogisticLoss(), 2.0)
    chunks = da.from_array(X, chunks=(700, 6)).map_blocks(np.asarray, order=order)
    source = DaskRows(chunks, da.from_array(y, chunks=700), **rows)
    big = source.objective(LogisticLoss(), 2.0)
    theta = np.linspace(-1, 1, 7)
    gm, hm = mem.gradient_hessian(theta)
    gb, hb = big.gradient_hessian(theta)
    np.testing.assert_allclose(gb, gm, rtol=1e-11)
    np.testing.assert_allclose(hb, hm, rtol=1e-11)
    assert big.passes == 1
    assert big.value(theta) == pytest.approx(mem.value(theta), rel=1e-12)
    np.testing.assert_allclose(big.gradient(theta), gm, rtol=1e-11)
    np.testing.assert_allclose(big.gradient_hessian(theta, hessian=False)[0], gm, rtol=1e-11)
    v = np.cos(np.arange(7.0))
    np.testing.assert_allclose(big.hessian_vector(theta, v), hm @ v, rtol=1e-11)
    np.testing.assert_allclose(big.hessian(theta), hm, rtol=1e-11)
    # every 7th row of each 700-row chunk: rows 0, 7, 14, ... of the whole, rescaled by 7
    head = slice(0, 2800)
    mem = PerturbedGLMObjective(Xt[head], y[head], LogisticLoss(), 2.0)
    big = DaskRows(chunks[head], da.from_array(y[head], chunks=700), **rows).objective(
        LogisticLoss(), 2.0
    )
    gb, hb = big.gradient_hessian(theta, stride=7)
    np.testing.assert_allclose(gb, mem.gradient(theta), rtol=1e-11)
    np.testing.assert_allclose(hb, mem.hessian(theta, stride=7), rtol=1e-11)
    assert not np.allclose(hb, mem.hessian(theta), rtol=1e-3)  # not the full Hessian


def test_amp_on_dask_equals_in_memory_for_the_same_noise(data):
    X, y = data
    kw = {"lam": 3.0, "sigma": 4.0, "tau": 0.01, "sigma_out": 0.15, "clip": np.sqrt(2)}
    Xt = add_intercept(transform_rows(X, "normalize", 1.0), 1.0)
    mem = amp(
        Xt, y, "logistic", row_bound=np.sqrt(2), solver="lbfgs", rng=np.random.default_rng(5), **kw
    )
    source = DaskRows(
        da.from_array(X, chunks=(500, 6)),
        da.from_array(y, chunks=500),
        row_norm="normalize",
        row_bound=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
    )
    big = amp(source, None, "logistic", row_bound=np.sqrt(2), rng=np.random.default_rng(5), **kw)
    assert big.event == mem.event
    # both certified points lie within tau/lam of the same theta^P; output noise is shared
    assert np.linalg.norm(big.theta - mem.theta) <= 2 * kw["tau"] / kw["lam"]
    assert big.info["grad_norm"] <= kw["tau"] and big.info["passes"] >= 2


@pytest.mark.parametrize("method", ["amp", "output", "dpgd"])
def test_estimators_accept_dask_arrays(data, method):
    X, y = data
    kw = {"epsilon": 2.0, "method": method, "random_state": 0, "solver": "lbfgs", "epochs": 10}
    mem = DPLogisticRegression(classes=[-1, 1], **kw).fit(X, y)
    big = DPLogisticRegression(classes=[-1, 1], **kw).fit(
        da.from_array(X, chunks=(800, 6)), da.from_array(y, chunks=800)
    )
    assert big.dp_event_ == mem.dp_event_ and big.epsilon_ == mem.epsilon_
    np.testing.assert_allclose(big.coef_, mem.coef_, atol=2 * 0.01 / 1.0)
    pred = big.predict(da.from_array(X, chunks=(900, 6)))
    assert isinstance(pred, da.Array)
    np.testing.assert_array_equal(pred.compute(), big.predict(X))


def test_regressor_on_dask(data):
    X, _ = data
    y = np.clip(X[:, 1] / 4, -1, 1)
    mem = DPLinearRegression(epsilon=3.0, random_state=1, solver="lbfgs").fit(X, y)
    big = DPLinearRegression(epsilon=3.0, random_state=1, solver="lbfgs").fit(
        da.from_array(X, chunks=(1000, 6)), da.from_array(y, chunks=1000)
    )
    np.testing.assert_allclose(big.coef_, mem.coef_, atol=0.05)


def test_dask_refusals(data):
    X, y = data
    Xd, yd = da.from_array(X, chunks=(800, 6)), da.from_array(y, chunks=800)
    with pytest.raises(ValueError, match="not available on dask"):
        DPLogisticRegression(classes=[-1, 1], method="dpsgd").fit(Xd, yd)
    with pytest.raises(ValueError, match="row_bound"):
        DPLogisticRegression(classes=[-1, 1], row_norm="error", row_bound=0.5, solver="lbfgs").fit(
            Xd, yd
        )
    bad = X.copy()
    bad[1234, 2] = np.nan
    for setting in (True, False):  # found by the kept scales' task, or by every pass
        with (
            dask.config.set({"dpconvex.cache-rows": setting}),
            pytest.raises(ValueError, match="NaN"),
        ):
            DPLogisticRegression(classes=[-1, 1], solver="lbfgs").fit(
                da.from_array(bad, chunks=(800, 6)), yd
            )
    with pytest.raises(ValueError, match="SVRG"):
        DPLogisticRegression(classes=[-1, 1], solver="svrg").fit(Xd, yd)


def test_synthetic_data_is_chunkwise_and_deterministic():
    X, y = synthetic_glm(2500, 4, chunk_rows=1000, seed=3)
    assert X.chunks == ((1000, 1000, 500), (4,))
    np.testing.assert_array_equal(
        X.compute(), synthetic_glm(2500, 4, chunk_rows=1000, seed=3)[0].compute()
    )
    assert set(np.unique(y.compute())) == {-1, 1}


def test_read_zarr_gives_the_stored_rows_chunked_alike(tmp_path):
    pytest.importorskip("zarr")
    X, y = synthetic_glm(2500, 4, chunk_rows=1000, seed=3)
    path = tmp_path / "glm.zarr"
    da.to_zarr(X.astype(np.float32), str(path), component="X")
    da.to_zarr(y, str(path), component="y")
    Xz, yz = read_zarr(path)
    assert Xz.chunks == ((1000, 1000, 500), (4,)) and yz.chunks == ((1000, 1000, 500),)
    assert Xz.dtype == np.float32  # stored dtype; the fit computes each chunk in float64
    np.testing.assert_array_equal(Xz.compute(), X.compute().astype(np.float32))
    np.testing.assert_array_equal(yz.compute(), y.compute())
    assert read_zarr(path, y=None)[1] is None
    with pytest.raises(ValueError, match="vector of 2500 rows"):
        read_zarr(path, x="X", y="X")
    model = DPLogisticRegression(epsilon=1.0, classes=[-1, 1], random_state=0).fit(Xz, yz)
    memory = DPLogisticRegression(epsilon=1.0, classes=[-1, 1], random_state=0)
    memory.fit(Xz.compute(), yz.compute())
    assert model.dp_event_ == memory.dp_event_
    bound = 2 * model.mechanism_params_["tau"] / model.mechanism_params_["lam"]
    assert np.abs(model.coef_ - memory.coef_).max() <= bound


def test_read_parquet_reads_files_as_chunks_and_labels_alone(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    X, y = synthetic_glm(2500, 3, chunk_rows=1000, seed=4)
    X, y = X.compute(), y.compute()
    for k, (lo, hi) in enumerate([(0, 1000), (1000, 2200), (2200, 2500)]):
        table = {f"x{j}": X[lo:hi, j].astype(np.float32) for j in range(3)}
        table["label"] = y[lo:hi]
        pq.write_table(pa.table(table), tmp_path / f"part{k}.parquet")
    Xp, yp = read_parquet(tmp_path, "label")
    assert Xp.chunks == ((1000, 1200, 300), (3,)) and yp.chunks == ((1000, 1200, 300),)
    assert Xp.dtype == np.float64 and yp.dtype == y.dtype
    np.testing.assert_array_equal(Xp.compute(), X.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(yp.compute(), y)
    # the labels' graph reads only the label column
    assert "_parquet_matrix" not in str(dict(yp.__dask_graph__()))
    # one task per file, keyed by its row chunk, so that a fit can read the first files
    # first (cache_rows' priority names chunks by these keys)
    assert dict(Xp.__dask_graph__()).keys() == {(Xp.name, i, 0) for i in range(3)}
    assert dict(yp.__dask_graph__()).keys() == {(yp.name, i) for i in range(3)}
    assert read_parquet(tmp_path / "part0.parquet", None)[1] is None
    one = read_parquet(tmp_path, "label", ["x1"])[0].compute()
    np.testing.assert_array_equal(one[:, 0], Xp.compute()[:, 1])
    with pytest.raises(ValueError, match="target column 'nope'"):
        read_parquet(tmp_path, "nope")
    with pytest.raises(ValueError, match=r"feature columns \['z'\] not in"):
        read_parquet(tmp_path, "label", ["z"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .parquet files"):
        read_parquet(tmp_path / "empty", "label")
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        read_parquet(tmp_path / "missing.parquet", "label")


def test_cached_rows_change_nothing_the_fit_computes(data):
    X, y = data
    Xd, yd = da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700)
    fits = {}
    for setting in ("auto", True, False):
        with dask.config.set({"dpconvex.cache-rows": setting}):
            model = DPLogisticRegression(epsilon=1.0, classes=[-1, 1], random_state=0)
            fits[setting] = model.fit(Xd, yd)
    for setting in (True, "auto"):
        np.testing.assert_array_equal(fits[setting].coef_, fits[False].coef_)
        assert fits[setting].dp_event_ == fits[False].dp_event_
    # persisted collections hold their chunks: no graph reaches the source arrays, and
    # the targets are kept with them (no pass recomputes them)
    target = da.where(yd > 0, 1.0, -1.0)
    rows = {"row_norm": "clip", "row_bound": 2.0, "fit_intercept": True, "intercept_scaling": 1.5}
    for first in (0, 1, 700, 701, 2500, X.shape[0], 10**9):
        kept, (kept_target,), scales = cache_rows(Xd, [target], first, rows)
        assert kept.chunks == Xd.chunks
        assert len(kept.__dask_graph__()) == len(kept.chunks[0])
        assert len(kept_target.__dask_graph__()) == len(kept.chunks[0])
        assert len(scales.__dask_graph__()) == len(kept.chunks[0])
        np.testing.assert_array_equal(kept.compute(), X)
        np.testing.assert_array_equal(kept_target.compute(), np.where(y > 0, 1.0, -1.0))
        np.testing.assert_array_equal(scales.compute(), chunk_scales(X, rows))
    assert cache_rows(Xd, [target])[2] is None  # no row policy: no scales
    kept_X, kept_y = cache_inputs(Xd, yd)
    assert len(kept_y.__dask_graph__()) == len(yd.chunks[0])
    assert len(kept_X.__dask_graph__()) == len(Xd.chunks[0])
    np.testing.assert_array_equal(kept_X.compute(), X)
    with dask.config.set({"dpconvex.cache-rows": False}):
        assert cache_rows(Xd, [target])[0] is Xd
        assert cache_rows(Xd, [target])[1][0] is target
        assert cache_rows(Xd, [target], 0, rows)[2] is None
        assert cache_inputs(Xd, yd) == (Xd, yd)
    with (
        dask.config.set({"dpconvex.cache-rows": "sometimes"}),
        pytest.raises(ValueError, match="dpconvex.cache-rows must be"),
    ):
        DPLogisticRegression(epsilon=1.0, classes=[-1, 1]).fit(Xd, yd)


def test_read_table_and_cli_fit_with_dask(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    X, y = synthetic_glm(4000, 3, chunk_rows=1000, seed=2)
    frame = pd.DataFrame(X.compute(), columns=["a", "b", "c"])
    frame["label"] = y.compute()
    frame.to_csv(tmp_path / "t.csv", index=False)
    (Xtr, ytr), (Xte, yte) = read_table(tmp_path / "t.csv", "label", seed=0)
    assert Xtr.shape[0] + Xte.shape[0] == 4000 and Xtr.shape[1] == 3
    with pytest.raises(ValueError, match="target column"):
        read_table(tmp_path / "t.csv", "nope")
    from dpconvex.cli import main

    with pytest.raises(SystemExit) as info:
        main(
            [
                "fit",
                "--data",
                str(tmp_path / "t.csv"),
                "--target",
                "label",
                "--epsilon",
                "2",
                "--delta",
                "1e-5",
                "--dask",
                "--classes=-1,1",
                "--json",
                "--seed",
                "0",
                "--out",
                str(tmp_path / "m.json"),
            ]
        )
    assert info.value.code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["epsilon"] <= 2.0 and 0.5 < result["accuracy"] <= 1.0
    assert json.loads((tmp_path / "m.json").read_text())["dask"] is True


TIGHT_AMP = {"lam": 3.0, "sigma": 4.0, "tau": 1e-8, "sigma_out": 1e-6, "clip": np.sqrt(2)}
UNIT_ROWS = {"row_norm": "normalize", "row_bound": 1.0, "fit_intercept": True}


def _amp_in_memory_and_out_of_core(X, y, seed):
    """AMP on the same rows and noise draws: (in-memory release, dask source, dask release)."""
    Xt = add_intercept(transform_rows(X, "normalize", 1.0), 1.0)
    rng = np.random.default_rng
    mem = amp(Xt, y, "logistic", row_bound=np.sqrt(2), rng=rng(seed), **TIGHT_AMP)
    source = DaskRows(da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700), **UNIT_ROWS)
    big = amp(source, None, "logistic", row_bound=np.sqrt(2), rng=rng(seed), **TIGHT_AMP)
    return mem, source, big


def test_out_of_core_newton_certifies_in_few_passes(data):
    """Default solver on dask: the Hessian comes with the gradient's pass (fewer passes).

    On these nearly separable rows Newton needs 6 steps (7 passes) to tau = 1e-8;
    L-BFGS (with its Newton-CG polish) needs several times more.
    """
    X, y = data
    kw, rows = TIGHT_AMP, UNIT_ROWS
    mem, source, big = _amp_in_memory_and_out_of_core(X, y, seed=7)
    assert big.info["solver"] == "newton" and big.info["passes"] <= 8
    slow = amp(source, None, "logistic", row_bound=np.sqrt(2), rng=np.random.default_rng(7),
               solver="lbfgs", **kw)  # fmt: skip
    assert slow.info["passes"] > 2 * big.info["passes"]
    assert big.info["grad_norm"] <= kw["tau"]
    assert np.linalg.norm(big.theta - mem.theta) <= 2 * kw["tau"] / kw["lam"]
    # the certificate is the last pass's own gradient: recomputing it agrees
    draws = np.random.default_rng(7)
    b = draws.normal(0.0, kw["sigma"], 7)
    before_output_noise = big.theta - draws.normal(0.0, kw["sigma_out"], 7)
    check = DaskRows(da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700), **rows)
    loss = ClippedLoss(LogisticLoss(), kw["clip"])
    again = check.objective(loss, kw["lam"], b).gradient_norm(before_output_noise)
    assert again == pytest.approx(big.info["grad_norm"], rel=1e-3, abs=1e-11)


def test_out_of_core_warm_start_reads_only_the_first_rows(data, monkeypatch):
    import dpconvex.optim.solvers as solvers

    monkeypatch.setattr(solvers, "WARM_START_ROWS", 600)
    kw = TIGHT_AMP
    mem, _, big = _amp_in_memory_and_out_of_core(*data, seed=2)
    assert big.info["grad_norm"] <= kw["tau"]
    assert np.linalg.norm(big.theta - mem.theta) <= 2 * kw["tau"] / kw["lam"]


def test_a_source_cannot_claim_a_smaller_bound(data):
    X, y = data
    rows = {"row_norm": "clip", "row_bound": 2.0, "fit_intercept": False}
    source = DaskRows(da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700), **rows)
    kw = {"lam": 3.0, "sigma": 4.0, "tau": 0.01, "sigma_out": 0.1, "clip": 1.0}
    with pytest.raises(ValueError, match="declared bound"):
        amp(source, None, "logistic", row_bound=1.0, rng=np.random.default_rng(0), **kw)
    with pytest.raises(ValueError, match="inside the row source"):
        amp(source, y, "logistic", row_bound=2.0, rng=np.random.default_rng(0), **kw)


def test_kept_rows_load_the_warm_start_chunks_first():
    distributed = pytest.importorskip("distributed")

    def chunk(block_info=None):
        return np.full((50, 3), float(block_info[None]["chunk-location"][0]))

    X = da.map_blocks(chunk, chunks=((50,) * 12, (3,)), dtype=float)
    target = da.ones(600, chunks=50)
    with (
        dask.config.set({"dpconvex.cache-rows": True}),
        distributed.Client(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None
        ),
    ):
        kept, _, _ = cache_rows(X, [target], first_rows=120)  # rows 0-119: chunks 0, 1, 2
        order = [f.key[1] for f in distributed.as_completed(distributed.futures_of(kept))]
    assert sorted(order[:3]) == [0, 1, 2], order


@pytest.mark.parametrize("saturation", [None, "inf"])
def test_kept_rows_load_while_the_labels_are_checked(saturation):
    """cache_inputs: the labels first, then the warm start's chunks, and a label check
    submitted afterwards runs before the other chunks (which load meanwhile), whether
    the scheduler queues the chunks (dask's default) or sends them all to the workers
    at once (worker-saturation inf: then only their priority keeps them behind)."""
    import time

    distributed = pytest.importorskip("distributed")

    def chunk(block_info=None):
        time.sleep(0.08)
        return np.full((50, 3), float(block_info[None]["chunk-location"][0]))

    X = da.map_blocks(chunk, chunks=((50,) * 12, (3,)), dtype=float)
    y = da.ones(600, chunks=50)
    queuing = {} if saturation is None else {"distributed.scheduler.worker-saturation": saturation}
    with (
        dask.config.set({"dpconvex.cache-rows": True, **queuing}),
        distributed.Client(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None
        ) as client,
    ):
        with distributed.get_task_stream() as stream:
            kept_X, kept_y = cache_inputs(X, y, first_rows=120)  # rows 0-119: chunks 0-2
            # later than dask's FIFO window (0.1 s): without the rows' lower priority the
            # check would wait for every chunk submitted before it
            time.sleep(0.2)
            check = client.compute((kept_y == 1).all())
            assert check.result()
            distributed.wait(kept_X)
    done = sorted(stream.data, key=lambda task: task["startstops"][-1]["stop"])
    order = [task["key"] for task in done]
    rows = [key[1] for key in order if key[0] == kept_X.name]
    labels = [i for i, key in enumerate(order) if key[0] == kept_y.name]
    assert sorted(rows[:3]) == [0, 1, 2], order
    assert max(labels) < order.index((kept_X.name, rows[0], 0)), order
    # at most a chunk or two was under way when the check was submitted
    later = [key for key in order[order.index(check.key) :] if key[0] == kept_X.name]
    assert len(later) >= 6, order


def test_kept_rows_and_labels_of_a_row_block_share_a_worker_in_turn():
    """cache_inputs on a cluster: row block i of X and y on worker i mod W (sorted)."""
    distributed = pytest.importorskip("distributed")
    X = da.ones((600, 3), chunks=(50, 3))
    y = da.ones(600, chunks=50)
    with (
        dask.config.set({"dpconvex.cache-rows": True}),
        distributed.Client(
            processes=False, n_workers=3, threads_per_worker=1, dashboard_address=None
        ) as client,
    ):
        workers = sorted(client.scheduler_info()["workers"])
        kept_X, kept_y = cache_inputs(X, y, first_rows=120)
        distributed.wait([kept_X, kept_y])
        held = client.who_has([kept_X, kept_y])
    for key, where in held.items():
        assert list(where) == [workers[key[1] % 3]], (key, where)
    assert len(held) == 24


@pytest.mark.parametrize("m", [1, 120, 150, 600])
def test_subsample_of_rows_held_in_the_workers_is_gathered_as_stored(data, m):
    distributed = pytest.importorskip("distributed")
    from dpconvex.data.dask_rows import _held_head

    X, y = data
    X, y = X[:600], y[:600].astype(float)
    Xd, yd = da.from_array(X, chunks=(50, 6)), da.from_array(y, chunks=50)
    rows = {"row_norm": "normalize", "row_bound": 1.0, "fit_intercept": True}
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None
    ):
        assert _held_head(Xd, yd, m) is None  # not held: read by a task
        kept_X, kept_y = dask.persist(Xd, yd)
        head_X, head_y = _held_head(kept_X, kept_y, m)
        sub = DaskRows(kept_X, kept_y, **rows).subsample(m)
    np.testing.assert_array_equal(head_X, X[:m])
    np.testing.assert_array_equal(head_y, y[:m])
    expected = DaskRows(Xd, yd, **rows).subsample(m)  # the synchronous scheduler
    theta = np.linspace(-1, 1, 7)
    loss = LogisticLoss()
    np.testing.assert_array_equal(
        sub.objective(loss, 1.0).value_and_gradient(theta)[1],
        expected.objective(loss, 1.0).value_and_gradient(theta)[1],
    )
    assert sub.n == expected.n == m


def test_passes_over_rows_held_in_the_workers_run_on_their_futures(data, monkeypatch):
    """Held chunks: one task per chunk on the chunks' futures, the same sums as the
    blockwise graph; the Newton warm start is solved on the worker that holds the first
    rows, with the same result as here; ``rows_held`` only with the scales kept."""
    distributed = pytest.importorskip("distributed")
    import dpconvex.data.dask_rows as source
    from dpconvex.data.dask_rows import _held_chunks
    from dpconvex.optim.solvers import _subsample_solution

    X, y = data
    Xd, yd = da.from_array(X, chunks=(700, 6)), da.from_array(y.astype(float), chunks=700)
    rows = {"row_norm": "clip", "row_bound": 2.0, "fit_intercept": True, "intercept_scaling": 1.0}
    loss = ClippedLoss(LogisticLoss(), 0.5)
    theta = np.linspace(-1, 1, 7)
    lazy = DaskRows(Xd, yd, **rows)
    expected = lazy.objective(loss, 2.0).gradient_hessian(theta)
    start = np.zeros(7)
    solve_sub = partial(_subsample_solution, theta=start)
    here = lazy.objective(loss, 2.0).on_subsample(1500, solve_sub)
    assert not lazy.rows_held and _held_chunks(Xd, yd) is None
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as client:
        with dask.config.set({"dpconvex.cache-rows": True}):
            kept, (kept_y,), scales = cache_rows(Xd, [yd], 1500, rows)
        held = DaskRows(kept, kept_y, **rows, scales=scales)
        assert held.rows_held and not DaskRows(kept, kept_y, **rows).rows_held
        assert [len(c) for c in _held_chunks(kept, kept_y, scales)] == [len(Xd.chunks[0])] * 3
        assert [len(c) for c in _held_chunks(kept, kept_y, count=2)] == [2, 2]
        submitted = []
        real_map = client.map
        monkeypatch.setattr(
            client, "map", lambda *a, **k: submitted.append(len(a[1])) or real_map(*a, **k)
        )
        obj = held.objective(loss, 2.0)
        grad, hess = obj.gradient_hessian(theta)
        assert submitted == [len(Xd.chunks[0])]  # one task per held chunk, no graph
        monkeypatch.setattr(source, "CLIENT_SUM_BYTES", 0)  # added on the workers
        tree = obj.gradient_hessian(theta)
        remote = obj.on_subsample(1500, solve_sub)
        assert obj.rows_held and held.passes == 2  # the warm start is not a pass
    np.testing.assert_allclose(grad, expected[0], rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(hess, expected[1], rtol=1e-11)
    np.testing.assert_allclose(tree[0], expected[0], rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(tree[1], expected[1], rtol=1e-11)
    for a, b in zip(remote, here, strict=True):
        np.testing.assert_array_equal(a, b)
    assert here[2] == 1500
