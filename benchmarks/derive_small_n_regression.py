"""Small-n private least squares: DP-GD's defaults against alternatives, on synthetic data only.

Run:  python benchmarks/derive_small_n_regression.py grid [--data-seeds 3] [--runs 4]
          [--configs adam,gd,...] [--save F.jsonl]
      python benchmarks/derive_small_n_regression.py table --load F.jsonl
      python benchmarks/derive_small_n_regression.py house [--seeds 5] [--configs ...]

``grid`` runs full-batch DP-GD (:func:`dpconvex.mechanisms.gradient_runs.dpsgd_runs`, the mechanism
of ``method="dpgd"``) on n in {200, 400, 1000, 3000}, d in {5, 15, 30} features (plus an
intercept column of value 1), epsilon in {0.5, 1, 4, 16}, delta 1e-5, with each
configuration of :data:`CONFIGS` (optimizer, step, steps T, ridge lam, clip C, all from the
public n, d, epsilon, delta and row bound R); the noise multiplier is calibrated to the T
steps exactly as the plan does. Three synthetic families, none of them the house tables:

* ``ball``: the ``linear`` recipe of ``benchmarks/derive_auto_method.py`` (rows in the
  unit ball, so R = sqrt 2 with the intercept; targets in [-1, 1], centred).
* ``box``: rows like :class:`dpconvex.preprocessing.TableEncoder` output: half the
  features numeric in [-1, 1] (skewed, off-centre), half 0/1 flags of rates in
  [0.05, 0.9]; row bound R = sqrt(d + 1) with the intercept; targets
  -0.4 + 0.25 (s + 0.8 noise) clipped to [-1, 1] (s the standardized signal; non-private
  R^2 about 0.6, mean far from 0 as for a skewed price scaled into its bounds).
* ``skew``: ``box`` with centred exponential noise (skewed errors: the case where a clipped
  squared loss, a Huber fit, could leave a bias as epsilon grows; run it with
  ``--epsilons 0.5,1,4,16,64,100`` to see whether a rule puts a floor under R^2).

Score: held-out R^2 (5,000 test rows), mean over data seeds x noise runs. ``table`` prints
each configuration's mean R^2 per cell and its difference to the first one listed. The
default DP-GD clip of :func:`dpconvex.mechanisms.dpgd.default_dpgd_clip` is ``adam_rho64``.

``house`` is the check: the documented recipe ``make_table_model`` on the house tables of
``benchmarks/raw_table_recipes.py`` with a configuration's settings passed to the
regression estimator (median over seeds, as ``bench_raw_tables.py`` reports).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dpconvex.accounting import gaussian_noise_multiplier  # noqa: E402
from dpconvex.losses import SquaredLoss  # noqa: E402
from dpconvex.mechanisms.dpgd import default_dpgd_steps  # noqa: E402
from dpconvex.mechanisms.gradient_runs import dpsgd_runs  # noqa: E402

DELTA = 1e-5
SIZES = (200, 400, 1000, 3000)
DIMS = (5, 15, 30)
EPSILONS = (0.5, 1.0, 4.0, 16.0)
TEST_ROWS = 5000


def ball(n, d, seed):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from derive_auto_method import synthetic

    X, Xt, y, yt = synthetic("linear", n, d, seed)
    return X, Xt, y, yt, 1.0


def box(n, d, seed, skew=False):
    rng = np.random.default_rng([32, 11 + skew, seed, n, d])
    m = n + TEST_ROWS
    k = d // 2
    num = np.clip(-0.3 + 0.35 * rng.standard_normal((m, k)) + 0.3 * rng.exponential(size=(m, k)),
                  -1.0, 1.0)  # fmt: skip
    rates = rng.uniform(0.05, 0.9, size=d - k)
    flags = (rng.random((m, d - k)) < rates).astype(float)
    X = np.hstack([num, flags])
    w = rng.normal(size=d)
    s = (X - X[n:].mean(0)) @ w
    s /= s[n:].std()
    noise = rng.exponential(size=m) - 1.0 if skew else rng.standard_normal(m)
    y = np.clip(-0.4 + 0.25 * (s + 0.8 * noise), -1.0, 1.0)
    return X[:n], X[n:], y[:n], y[n:], math.sqrt(d)


def skew(n, d, seed):
    return box(n, d, seed, skew=True)


FAMILIES = {"ball": ball, "box": box, "skew": skew}


# -- configurations: (optimizer, learning rate, steps, lam, clip) from public values ----------
def _adam(n, d, eps, R, steps=None, lam=0.0, clip=None, lr=0.02):
    return ("adam", lr, steps or default_dpgd_steps(n, d, eps, DELTA), lam, clip or R)


def _adam_rho(n, d, eps, R, c=1 / 32, lo=1 / 8):
    """Clip fraction clip(c / rho, lo, 1), rho = z sqrt(d) / n the per-step noise-to-clip ratio."""
    steps = default_dpgd_steps(n, d, eps, DELTA)
    rho = gaussian_noise_multiplier(eps, DELTA, steps) * math.sqrt(d) / n
    return _adam(n, d, eps, R, clip=R * min(1.0, max(lo, c / rho)))


def _gd(n, d, eps, R, steps=None, lam=0.0, clip=None, scale=1.0):
    return ("sgd", scale / R**2, steps or default_dpgd_steps(n, d, eps, DELTA), lam, clip or R)


def smooth_steps(n, d, eps, R, clip, factor=1.0, lo=10, hi=1000):
    """T* = (beta^2 D^2 eps^2 n^2 / (2 d C^2 log(1/delta)))^(1/3) with beta = R^2, D = 1."""
    t = (R**4 * eps**2 * n**2 / (2.0 * d * clip**2 * math.log(1.0 / DELTA))) ** (1 / 3)
    return int(min(hi, max(lo, math.ceil(factor * t))))


def _gd3(n, d, eps, R, clip=None, factor=1.0, lam=0.0):
    clip = clip or R
    return ("sgd", 1.0 / R**2, smooth_steps(n, d, eps, R, clip, factor), lam, clip)


def _adam3(n, d, eps, R, clip=None, factor=1.0):
    clip = clip or R
    return ("adam", 0.02, smooth_steps(n, d, eps, R, clip, factor), 0.0, clip)


CONFIGS = {
    "adam": _adam,  # today's default
    "adam_lr005": lambda n, d, e, R: _adam(n, d, e, R, lr=0.005),
    "adam_lr05": lambda n, d, e, R: _adam(n, d, e, R, lr=0.05),
    "adam_C/2": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 2),
    "adam_C/4": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 4),
    "adam_C/8": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 8),
    "adam_C/16": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 16),
    "adam_C/32": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 32),
    "adam_C/8_lr01": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 8, lr=0.01),
    "adam_C/8_T100": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 8, steps=100),
    "adam_C/8_T50": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 8, steps=50),
    "adam_C/8_T300": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 8, steps=300),
    "adam_C/8_T1000": lambda n, d, e, R: _adam(n, d, e, R, clip=R / 8, steps=1000),
    "adam_rho32": _adam_rho,
    "adam_rho16": lambda n, d, e, R: _adam_rho(n, d, e, R, c=1 / 16),
    "adam_rho64": lambda n, d, e, R: _adam_rho(n, d, e, R, c=1 / 64),
    "adam3_C/4": lambda n, d, e, R: _adam3(n, d, e, R, clip=R / 4),
    "gd3_C/8": lambda n, d, e, R: _gd3(n, d, e, R, clip=R / 8),
    "adam_T100": lambda n, d, e, R: _adam(n, d, e, R, steps=100),
    "adam_T1000": lambda n, d, e, R: _adam(n, d, e, R, steps=1000),
    "gd": _gd,
    "gd_C/2": lambda n, d, e, R: _gd(n, d, e, R, clip=R / 2),
    "gd_C/4": lambda n, d, e, R: _gd(n, d, e, R, clip=R / 4),
    "gd_T1000": lambda n, d, e, R: _gd(n, d, e, R, steps=1000),
    "gd_T100": lambda n, d, e, R: _gd(n, d, e, R, steps=100),
    "gd3": _gd3,
    "gd3x3": lambda n, d, e, R: _gd3(n, d, e, R, factor=3.0),
    "gd3x1/3": lambda n, d, e, R: _gd3(n, d, e, R, factor=1 / 3),
    "gd3_C/2": lambda n, d, e, R: _gd3(n, d, e, R, clip=R / 2),
    "gd3_C/4": lambda n, d, e, R: _gd3(n, d, e, R, clip=R / 4),
    "adam3": _adam3,
    "adam3_C/2": lambda n, d, e, R: _adam3(n, d, e, R, clip=R / 2),
}


def fit_runs(cfg, X, y, R, eps, runs, seed):
    """``runs`` independent DP-GD fits (intercept column appended); thetas (runs, d + 1)."""
    n, d = X.shape
    Xa = np.hstack([X, np.ones((n, 1))])
    Rb = math.sqrt(R**2 + 1.0)
    norms = np.linalg.norm(Xa, axis=1)
    Xa = Xa / np.maximum(1.0, norms / Rb)[:, None]
    opt, lr, steps, lam, clip = CONFIGS[cfg](n, d + 1, eps, Rb)
    z = gaussian_noise_multiplier(eps, DELTA, steps)
    thetas = dpsgd_runs(
        Xa, y, SquaredLoss(), noise_multiplier=z, clip=clip, sampling_rate=None, steps=steps,
        learning_rates=np.full(runs, lr), optimizer=opt, lam=lam, row_bound=Rb,
        rng=np.random.default_rng([seed, 99]),
    )  # fmt: skip
    return thetas, steps


def r2(theta, Xt, yt):
    pred = Xt @ theta[:-1] + theta[-1]
    return 1.0 - np.mean((yt - pred) ** 2) / np.var(yt)


def grid(args) -> None:
    configs = args.configs.split(",")
    out = Path(args.save)
    done = set()
    if out.exists():
        done = {(r["family"], r["n"], r["d"], r["seed"], r["config"])
                for r in map(json.loads, out.read_text().splitlines()) if r}  # fmt: skip
    start = time.perf_counter()
    for fam in args.families.split(","):
        for n in SIZES:
            for d in DIMS:
                for seed in range(args.data_seeds):
                    X, Xt, y, yt, R = FAMILIES[fam](n, d, seed)
                    lstsq = np.linalg.lstsq(np.hstack([X, np.ones((n, 1))]), y, rcond=None)[0]
                    rows = []
                    for cfg in configs:
                        if (fam, n, d, seed, cfg) in done:
                            continue
                        for eps in args.epsilons:
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                th, steps = fit_runs(cfg, X, y, R, eps, args.runs, seed)
                            rows.append(dict(
                                family=fam, n=n, d=d, seed=seed, config=cfg, epsilon=eps,
                                steps=steps, r2=[round(float(r2(t, Xt, yt)), 4) for t in th],
                                nonprivate=round(float(r2(lstsq, Xt, yt)), 4),
                            ))  # fmt: skip
                    with out.open("a") as fh:
                        fh.writelines(json.dumps(r) + "\n" for r in rows)
            print(f"{fam} n={n} {time.perf_counter() - start:.0f} s", flush=True)


def table(args) -> None:
    rows = [json.loads(x) for x in Path(args.load).read_text().splitlines() if x]
    cells = defaultdict(lambda: defaultdict(list))
    nonpriv = defaultdict(list)
    for r in rows:
        key = (r["family"], r["n"], r["d"], r["epsilon"])
        cells[key][r["config"]].extend(r["r2"])
        nonpriv[key].append(r["nonprivate"])
    configs = list(dict.fromkeys(r["config"] for r in rows))
    if args.configs:
        configs = [c for c in args.configs.split(",") if c in configs]
    print("| family | n | d | eps | non-private | " + " | ".join(configs) + " |")
    print("|" + "---|" * (len(configs) + 5))
    diffs = defaultdict(list)
    for key in sorted(cells):
        means = {c: float(np.mean(cells[key][c])) for c in configs if c in cells[key]}
        best = max(means, key=means.get)
        cols = " | ".join(
            (f"{means[c]:.3f}" + ("*" if c == best else "")) if c in means else "-" for c in configs
        )
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]:g} | {np.mean(nonpriv[key]):.3f} | "
              f"{cols} |")  # fmt: skip
        base = means.get(configs[0])
        for c in means:
            if base is not None:
                diffs[c].append(means[c] - base)
    print(f"\nmean / min / max difference to {configs[0]} over cells (R^2):")
    for c in configs:
        if diffs[c]:
            dd = np.array(diffs[c])
            print(
                f"  {c}: mean {dd.mean():+.3f}, min {dd.min():+.3f}, max {dd.max():+.3f}, "
                f"wins {int(np.sum(dd > 0.005))}/{dd.size}, losses {int(np.sum(dd < -0.005))}"
            )


def house(args) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import importlib

    from bench_raw_tables import fit_default
    from raw_table_recipes import HOUSE_VARIANTS, house_table

    gradient = importlib.import_module("dpconvex.mechanisms.dpgd")  # "dpgd" is also a function

    print("| config | variant | eps | median R^2 | scores |")
    print("|---|---|---|---|---|")
    for cfg in args.configs.split(","):
        for variant in HOUSE_VARIANTS:
            tables = [house_table(variant, s) for s in range(args.seeds)]
            for eps in (1.0, 4.0):
                scores = []
                for s, t in enumerate(tables):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        patch = _patch(cfg)
                        old, old_run = gradient.DpgdPlan.__init__, gradient.DpgdPlan.run
                        gradient.DpgdPlan.__init__ = patch(old)
                        gradient.DpgdPlan.run = _run
                        try:
                            sc, _ = fit_default(t, eps, s)
                        finally:
                            gradient.DpgdPlan.__init__ = old
                            gradient.DpgdPlan.run = old_run
                    scores.append(sc)
                print(f"| {cfg} | {variant} | {eps:g} | {np.median(scores):.3f} | "
                      f"{' '.join(f'{x:.2f}' for x in scores)} |", flush=True)  # fmt: skip


def _run(self, X, y, rng):
    from dpconvex.mechanisms import dpgd

    p = self.params
    return dpgd(
        X, y, self.inputs.loss, noise_multiplier=p["noise_multiplier"], clip=p["clip"],
        steps=p["steps"], learning_rate=p["learning_rate"],
        optimizer=getattr(self, "_cfg_optimizer", self.setting("optimizer")), lam=p["lam"],
        rng=rng, row_bound=self.inputs.row_bound, rows=self.inputs.n,
    )  # fmt: skip


def _patch(cfg):
    """Wrap DpgdPlan.__init__ to run configuration ``cfg`` (least squares only)."""
    from dpconvex.mechanisms import dpgd_event

    def wrap(old):
        def init(self, inputs):
            old(self, inputs)
            if inputs.loss.name != "squared":
                return
            opt, lr, steps, lam, clip = CONFIGS[cfg](
                inputs.n, inputs.d, inputs.epsilon, inputs.row_bound
            )
            z = gaussian_noise_multiplier(inputs.epsilon, inputs.delta, steps)
            self.params = dict(noise_multiplier=z, steps=steps, clip=clip, learning_rate=lr,
                               lam=lam)  # fmt: skip
            self.event = dpgd_event(z, steps)
            self._cfg_optimizer = opt

        return init

    return wrap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("grid", "table", "house"))
    parser.add_argument("--data-seeds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilons", type=lambda s: [float(e) for e in s.split(",")],
                        default=list(EPSILONS))  # fmt: skip
    parser.add_argument("--families", default="ball,box")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--save", default="derive_small_n_regression.jsonl")
    parser.add_argument("--load", default="derive_small_n_regression.jsonl")
    args = parser.parse_args()
    {"grid": grid, "table": table, "house": house}[args.what](args)


if __name__ == "__main__":
    main()
