"""Snapshot of seeded outputs and privacy numbers, to show that a refactor changed nothing.

    python tools/behaviour_snapshot.py --out before.json      # on the old code
    python tools/behaviour_snapshot.py --out after.json       # on the new code
    python tools/behaviour_snapshot.py --compare before.json after.json

Each case runs a public entry point with fixed seeds and records its outputs exactly
(arrays as SHA-256 of their bytes plus the first values in hexadecimal floats; errors as
type and message; saved files as SHA-256 of their bytes). ``--compare`` prints every case
whose record differs and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy: multi-threaded BLAS sums differ in bits

import numpy as np  # noqa: E402


def _rec(value):
    """A JSON record of ``value`` that changes when any bit of it does."""
    if isinstance(value, np.ndarray) or (
        isinstance(value, (list, tuple)) and value and isinstance(value[0], np.ndarray)
    ):
        if isinstance(value, np.ndarray):
            arr = np.ascontiguousarray(value)
            head = [float(x).hex() for x in arr.ravel()[:4]] if arr.dtype.kind == "f" else None
            return {"sha": hashlib.sha256(arr.tobytes()).hexdigest()[:16], "shape": arr.shape,
                    "dtype": str(arr.dtype), "head": head}
        return [_rec(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, (int, np.integer, bool, str)) or value is None:
        return value if not isinstance(value, np.integer) else int(value)
    if isinstance(value, dict):
        return {str(k): _rec(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_rec(v) for v in value]
    return repr(value)


def _file_sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _data(n=400, d=6, seed=0, task="classification"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    w = rng.normal(size=d)
    if task == "classification":
        y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)
    else:
        y = np.clip(X @ w + 0.2 * rng.normal(size=n), -1, 1)
    return X, y


def _estimator_cases():
    import dpconvex as dp

    out = {}
    Xc, yc = _data()
    Xr, yr = _data(task="regression")
    for method in ("auto", "amp", "dpsgd", "dpgd", "output"):
        for eps in (0.5, 4.0):
            key = f"logistic/{method}/{eps}"
            out[key] = lambda m=method, e=eps: _fit(dp.DPLogisticRegression, Xc, yc, m, e)
    for method in ("auto", "amp", "dpsgd", "dpgd", "adassp"):
        for eps in (0.5, 4.0):
            key = f"linear/{method}/{eps}"
            out[key] = lambda m=method, e=eps: _fit(
                dp.DPLinearRegression, Xr, yr, m, e, y_bound=1.0)
    out["huber/auto/1"] = lambda: _fit(dp.DPHuberRegressor, Xr, yr, "auto", 1.0, y_bound=1.0)
    out["linear/ybounds"] = lambda: _fit(
        dp.DPLinearRegression, Xr, yr * 3 + 5, "auto", 1.0, y_bounds=(2.0, 8.0))
    out["logistic/rdp"] = lambda: _fit(
        dp.DPLogisticRegression, Xc, yc, "amp", 1.0, accounting="rdp")
    out["logistic/multiclass"] = lambda: _fit(
        dp.DPLogisticRegression, Xc, (Xc[:, 0] > 0).astype(int) + (Xc[:, 1] > 0), "auto", 2.0,
        classes=[0, 1, 2])
    out["error/nan"] = lambda: _fit(
        dp.DPLogisticRegression, np.where(Xc > 2, np.nan, Xc), yc, "auto", 1.0)
    out["error/labels"] = lambda: _fit(dp.DPLogisticRegression, Xc, yc + 5, "auto", 1.0,
                                       classes=[0, 1])
    out["error/eps"] = lambda: _fit(dp.DPLogisticRegression, Xc, yc, "auto", -1.0)
    out["error/rowbound"] = lambda: _fit(dp.DPLinearRegression, Xr * 10, yr, "amp", 1.0,
                                         y_bound=1.0, row_norm="error")
    out["dask"] = _dask_fits
    out["files/model"] = _model_file
    out["files/ledger"] = _ledger
    out["search"] = _search
    out["table_model"] = _table_model
    return out


def _fit(cls, X, y, method, eps, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = cls(epsilon=eps, method=method, random_state=7, **kw).fit(X, y)
    rec = {a: getattr(m, a) for a in ("coef_", "intercept_", "epsilon_", "delta_", "classes_")
           if hasattr(m, a)}
    rec["event"] = repr(getattr(m, "dp_event_", None))
    rec["method"] = getattr(m, "method_", None)
    rec["n_iter"] = getattr(m, "n_iter_", None)
    rec["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    rec["predict"] = m.predict(X[:50])
    return rec


def _dask_fits():
    try:
        import dask.array as da
    except ImportError:
        return "dask not installed"
    import dpconvex as dp

    X, y = _data(n=1200, d=5, seed=8)
    Xr, yr = _data(n=1200, d=5, seed=9, task="regression")
    out = {}
    for method in ("amp", "dpgd"):
        out[f"logistic/{method}"] = _fit(dp.DPLogisticRegression, da.from_array(X, chunks=300),
                                         da.from_array(y, chunks=300), method, 1.0,
                                         classes=[0, 1])
    for method in ("amp", "adassp"):
        out[f"linear/{method}"] = _fit(dp.DPLinearRegression, da.from_array(Xr, chunks=300),
                                       da.from_array(yr, chunks=300), method, 1.0, y_bound=1.0)
    return out


def _model_file():
    import dpconvex as dp

    X, y = _data()
    m = dp.DPLogisticRegression(epsilon=1.0, random_state=3).fit(X, y)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.json"
        dp.save_model(m, path)
        back = dp.load_model(path)
        return {"sha": _file_sha(path), "predict": back.predict(X[:30])}


def _ledger():
    import dpconvex as dp

    X, y = _data()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ledger.json"
        b = dp.Budget(path, epsilon=3.0, delta=1e-5)
        dp.DPLogisticRegression(epsilon=1.0, random_state=1, budget=b).fit(X, y)
        dp.DPLogisticRegression(epsilon=1.0, random_state=2, budget=b).fit(X, y)
        # the ledger holds times and ids: record what it reports, not its bytes
        return {"spent": repr(b.spent()), "remaining": repr(b.remaining()),
                "entries": [_untimed(repr(e)) for e in b.entries()],
                "summary": _untimed(repr(b.summary()).replace(str(tmp), "TMP")),
                "size": path.stat().st_size}


def _untimed(text: str) -> str:
    text = re.sub(r"'ledger_id': '[0-9a-f]+'", "'ledger_id': *", text)
    text = re.sub(r"'time_utc': '[^']*'", "'time_utc': *", text)
    return re.sub(r"(time=|'time': |'created': )[0-9.e+-]+", r"\1*", text)


def _search():
    import dpconvex as dp

    X, y = _data(n=1500, d=5, seed=4)
    out = {}
    for name, est, grid in (
        ("amp", dp.DPLogisticRegression(), {"lam": [5.0, 20.0], "solver": ["newton", "lbfgs"]}),
        ("dpgd", dp.DPLogisticRegression(method="dpgd", epochs=5),
         {"learning_rate": [1e-3, 1e-2, 1e-1]}),
    ):
        s = dp.PrivateRandomSearch(est, grid, epsilon=4.0, mu=4.0, random_state=5).fit(X, y)
        out[name] = {"coef": s.best_estimator_.coef_, "eps": s.epsilon_,
                     "params": repr(s.best_params_), "event": repr(s.dp_event_)}
    return out


def _table_model():
    import dpconvex as dp

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from raw_table_recipes import credit_table, house_table

    out = {}
    for table in (credit_table("lognormal", seed=0), house_table(seed=1)):
        kw = {}
        if table.task == "regression":
            kw = {"y_bounds": table.y_bounds, "y_search_range": table.y_search_range}
        pipe = dp.make_table_model(table.schema, n_samples=len(table.y_train), epsilon=1.0,
                                   delta=1e-5, task=table.task, random_state=3, **kw)
        pipe.fit(table.X_train, table.y_train)
        out[table.name] = {"eps": pipe.epsilon_, "event": repr(pipe.dp_event_),
                           "predict": np.asarray(pipe.predict(table.X_test[:40]))}
    return out


def _accounting_cases():
    from dpconvex import accounting as a

    out = {}
    out["gaussian"] = lambda: [a.gaussian_epsilon(1e-5, 1.0, s) for s in (0.5, 1.0, 3.0)]
    out["gaussian_delta"] = lambda: [a.gaussian_delta(1.0, 1.0, s) for s in (0.5, 1.0, 3.0)]
    out["dpsgd_noise"] = lambda: [a.dpsgd_noise_multiplier(e, 1e-5, 0.01, 1000)
                                  for e in (0.5, 2.0)]
    out["dpsgd_noise_rdp"] = lambda: a.dpsgd_noise_multiplier(1.0, 1e-5, 0.02, 300,
                                                              accounting="rdp")
    out["amp_pld"] = lambda: repr(a.amp_parameters(1.0, 1e-5, accounting="pld"))
    out["amp_rdp"] = lambda: repr(a.amp_parameters(1.0, 1e-5, accounting="rdp"))
    out["objpert_eps"] = lambda: a.objpert_epsilon(1e-5, **_objpert_kw())
    for acct in ("pld", "rdp"):
        for name, ev in _events().items():
            out[f"event/{acct}/{name}"] = lambda ac=acct, e=ev: _price(ac, e)
    return out


def _takes(func, n):
    import inspect

    try:
        inspect.signature(func).bind(*range(n))
        return True
    except TypeError:
        return False


def _objpert_kw():
    return {"beta": 0.5, "lipschitz": 1.0, "lam": 1.0, "sigma": 1.0}  # delta 1e-5


def _events():
    from dp_accounting import dp_event as de

    from dpconvex import accounting as a

    ev = {
        "gauss": de.GaussianDpEvent(1.3),
        "poisson": de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.1)),
                                          500),
        "composed": de.ComposedDpEvent([de.GaussianDpEvent(2.0), de.LaplaceDpEvent(3.0)]),
        "dpsgd": a.dpsgd_event(1.0, 0.02, 200),
    }
    try:
        cal = a.amp_parameters(1.0, 1e-5, accounting="pld")
        ev["amp"] = getattr(cal, "event", None) or getattr(cal, "dp_event", None)
    except Exception as exc:  # noqa: BLE001
        ev["amp_error"] = repr(exc)
    return {k: v for k, v in ev.items() if v is not None and not isinstance(v, str)}


def _price(acct, event):
    from dpconvex import accounting as a

    if acct == "pld":
        acc = a.PLDAccountant()
    else:
        acc = a.RdpAccountant()
    acc.compose(event)
    return {"eps": acc.get_epsilon(1e-5), "delta": acc.get_delta(1.0)}


def _family_cases():
    out = {}

    def sco_cases():
        from dpconvex import sco
        X, y = _data(n=500, d=4, seed=2)
        X = X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y = 2 * y - 1
        res = {}
        for name, call in {
            "phased": lambda: sco.phased_dpsgd(X, y, "logistic", epsilon=1.0, delta=1e-5,
                                               row_bound=1.0, random_state=1),
            "mirror": lambda: sco.noisy_mirror_descent(X, y, "logistic", p=1.5, epsilon=1.0,
                                                       delta=1e-5, row_bound=1.0,
                                                       random_state=1),
            "clipped": lambda: sco.clipped_dpsgd(X, y, "logistic", epsilon=1.0, delta=1e-5,
                                                 clip=1.0, radius=2.0, batch_size=50,
                                                 random_state=1),
        }.items():
            try:
                res[name] = _release(call)
            except Exception as exc:  # noqa: BLE001
                res[name] = {"error": type(exc).__name__, "message": str(exc)}
        return res

    def bcd_cases():
        from dpconvex import bcd
        M = bcd.synthetic_nmf(80, 12, 3, random_state=1)[0]
        return _release(lambda: bcd.sgd_nmf(M, 3, batch_size=16, epochs=2, learning_rate=0.05,
                                            noise_multiplier=1.0, clip=1.0, random_state=2))

    def public_cases():
        from dpconvex import public
        from dpconvex.losses import LogisticLoss
        X, y = _data(n=400, d=4, seed=5)
        mirror = public.EuclideanMirrorMap(4)
        return _release(lambda: public.pda_dpmd(
            X, y, LogisticLoss(), mirror, clip=1.0, steps=20, learning_rate=0.5,
            epsilon=1.0, delta=1e-5, random_state=2))

    def sampling_cases():
        from dpconvex import sampling
        X, y = _data(n=300, d=3, seed=6)
        return _release(lambda: sampling.posterior_sample(
            X, 2 * y - 1, epsilon=1.0, delta=1e-5, random_state=4, max_steps=20000))

    def counting_cases():
        from dpconvex import queries
        rng = np.random.default_rng(9)
        records = rng.integers(0, 2, size=(300, 8))
        return _release(lambda: queries.answer_counting_queries(records, 1.0, 1e-5,
                                                                random_state=3))

    out.update(sco=sco_cases, bcd=bcd_cases, public=public_cases, sampling=sampling_cases,
               counting=counting_cases)
    return out


def _release(call):
    res = call()
    if res is None:
        return None
    fields = {}
    for name in dir(res):
        if name.startswith("_"):
            continue
        val = getattr(res, name)
        if callable(val):
            continue
        fields[name] = val if isinstance(val, (np.ndarray, float, int, str, tuple, list)) \
            else repr(val)
    return fields


def _cli_cases():
    from click.testing import CliRunner

    def run(args):
        def go():
            from dpconvex.cli import cli
            r = CliRunner().invoke(cli, args)
            return {"code": r.exit_code, "out": r.output}
        return go

    return {
        "cli/account": run(["account", "--help"]),
        "cli/fit": run(["fit", "--help"]),
        "cli/schema": run(["schema", "--help"]),
    }


def snapshot() -> dict:
    cases = {}
    cases.update(_accounting_cases())
    cases.update(_estimator_cases())
    cases.update(_family_cases())
    cases.update(_cli_cases())
    out = {}
    from dpconvex import reset_session

    for name, case in cases.items():
        reset_session()
        try:
            out[name] = _rec(case())
        except Exception as exc:  # noqa: BLE001 - the error is part of the behaviour
            out[name] = {"error": type(exc).__name__, "message": str(exc)}
    return out


def compare(before: dict, after: dict) -> int:
    bad = 0
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            bad += 1
            print(f"DIFFERS: {key}\n  before: {str(before.get(key))[:300]}\n"
                  f"  after:  {str(after.get(key))[:300]}")
    print(f"{len(set(before) | set(after))} cases, {bad} differ")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2)
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        return compare(a, b)
    import dpconvex
    print(f"dpconvex from {dpconvex.__file__}", file=sys.stderr)
    snap = snapshot()
    Path(args.out).write_text(json.dumps(snap, indent=1, sort_keys=True))
    errors = sum(1 for v in snap.values() if isinstance(v, dict) and "error" in v)
    print(f"{len(snap)} cases written to {args.out} ({errors} record an error)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
