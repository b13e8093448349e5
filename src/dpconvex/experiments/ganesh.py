"""Figure 4.1 of Ganesh's thesis (EECS-2022-53, §4.5): PDA-DPMD vs cold/warm-start DP-GD.

Synthetic linear regression exactly as stated (thesis §4.5, "Simulation Results"):
theta* ~ N(0, I_k); each feature vector has 40 of its first k/5 and 80 of its last
4k/5 coordinates (uniformly at random) equal to 0.05, the rest 0; y ~ N(theta*.x, 0.01)
(variance 0.01, so the optimal population MSE is 0.01); n_priv = 10,000, n_pub = 1.5k; eps = 1,
delta = 1e-5. Methods:

* ``dpgd_cold`` — DP-GD from theta_0 = 0 (the thesis says "random initialization"
  without its law; 0 is the prior mean of theta*);
* ``dpgd_warm`` — DP-GD from the public ridge least-squares solution;
* ``pda_dpmd`` — Algorithm 1 with the public squared loss (plus a ridge of 1e-3
  times the mean eigenvalue, "for numerical stability") as mirror map, normalized
  so that the preconditioner has largest eigenvalue 1 (as in the thesis).

All three are Algorithm 1 (DP-GD is Psi = ||theta||^2/2) with per-example
clipping, the squared loss (y - x.theta)^2 / 2, and noise calibrated exactly for
T Gaussian steps under replace-one neighbours (the adjacency of the thesis's
sigma formula; :func:`dpconvex.public.pda_noise_multiplier`). Grid search over
the learning rate (a fraction of 2/lambda_top, lambda_top the largest eigenvalue
of the method's public preconditioned Hessian), the clipping norm and the number
of steps; averaged and last iterates are both outputs of a run (free
post-processing). As in the thesis, the configuration with the best mean
empirical loss (private-data MSE) over the trials is reported with its mean and
95% CI over the same trials; the selection is not private (it reproduces the
thesis's protocol). The exact population MSE of the reported configuration is
recorded too.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

from ..losses import SquaredLoss
from ..public import (
    EuclideanMirrorMap,
    linear_regression_mirror_map,
    pda_dpmd_runs,
    pda_noise_multiplier,
)
from .figures import pyplot

EPSILON, DELTA = 1.0, 1e-5
N_PRIV = 10_000
PUB_PER_DIM = 1.5
NEIGHBOURS = "replace_one"
RIDGE = 1e-3
VALUE = 0.05
NONZEROS = (40, 80)
METHODS = ("dpgd_cold", "dpgd_warm", "pda_dpmd")
LABELS = {
    "dpgd_cold": "DP-GD (cold start)",
    "dpgd_warm": "DP-GD (warm start)",
    "pda_dpmd": "PDA-DPMD",
}
#: Per-method grids: learning rate = fraction * 2 / lambda_top (the method's stability
#: limit on the public Hessian), clipping norm, number of steps. Chosen after a
#: wide exploratory search at k = 500 (fractions 1e-4..0.9, clips 0.03..1, steps
#: 5..200): DP-GD wants the largest stable steps, PDA-DPMD much smaller ones.
FULL = {
    "dims": (500, 1000, 2000, 3000, 4000, 5000, 6000),
    "trials": 20,
    "methods": {
        "dpgd_cold": {"rate_fractions": (0.3, 0.9), "clips": (0.1, 0.3), "steps": (100, 200, 400)},
        "dpgd_warm": {
            "rate_fractions": (0.1, 0.3, 0.9),
            "clips": (0.01, 0.03, 0.1),
            "steps": (25, 50, 100, 200),
        },
        "pda_dpmd": {
            "rate_fractions": (3e-4, 1e-3, 3e-3, 0.01, 0.03),
            "clips": (0.003, 0.01, 0.03, 0.1),
            "steps": (25, 50, 100, 200),
        },
    },
}
QUICK = {
    "dims": (500,),
    "trials": 3,
    "methods": {
        "dpgd_cold": {"rate_fractions": (0.9,), "clips": (0.1, 0.3), "steps": (100,)},
        "dpgd_warm": {"rate_fractions": (0.9,), "clips": (0.03, 0.1), "steps": (50,)},
        "pda_dpmd": {"rate_fractions": (3e-3, 0.03), "clips": (0.03,), "steps": (25, 50)},
    },
}


def fig41_data(k: int, n: int, rng: np.random.Generator, theta_star=None):
    """(X (CSR), y, theta*) of the thesis's synthetic design; k must be a multiple of 5."""
    if k % 5 or k // 5 < NONZEROS[0] or 4 * k // 5 < NONZEROS[1]:
        raise ValueError(f"k must be a multiple of 5 and at least 200, got {k}")
    theta_star = rng.standard_normal(k) if theta_star is None else theta_star
    first = k // 5
    cols = np.empty((n, sum(NONZEROS)), dtype=np.int64)
    for i in range(n):
        cols[i, : NONZEROS[0]] = rng.choice(first, NONZEROS[0], replace=False)
        cols[i, NONZEROS[0] :] = first + rng.choice(k - first, NONZEROS[1], replace=False)
    indptr = np.arange(n + 1) * cols.shape[1]
    X = sp.csr_matrix((np.full(cols.size, VALUE), cols.ravel(), indptr), shape=(n, k))
    X.sort_indices()
    y = X @ theta_star + 0.1 * rng.standard_normal(n)
    return X, y, theta_star


def population_mse(theta: np.ndarray, theta_star: np.ndarray) -> np.ndarray:
    """Exact E(y - x.theta)^2 = (theta - theta*)^T Sigma (theta - theta*) + 0.01.

    Sigma = E[x x^T] of the design: within block b (size n_b, m_b
    non-zeros) Sigma_ii = c^2 m_b/n_b and Sigma_ij = c^2 m_b(m_b-1)/(n_b(n_b-1));
    across blocks c^2 (m_1/n_1)(m_2/n_2). ``theta`` may be (k,) or (B, k).
    """
    u = np.atleast_2d(theta) - theta_star
    k = theta_star.size
    sizes = (k // 5, k - k // 5)
    blocks = (u[:, : sizes[0]], u[:, sizes[0] :])
    c2 = VALUE**2
    total = np.zeros(u.shape[0])
    sums = []
    for (nb, mb), ub in zip(zip(sizes, NONZEROS, strict=True), blocks, strict=True):
        sq, s = np.sum(ub**2, axis=1), np.sum(ub, axis=1)
        off = c2 * mb * (mb - 1) / (nb * (nb - 1))
        total += c2 * mb / nb * sq + off * (s**2 - sq)
        sums.append(s)
    total += 2 * c2 * (NONZEROS[0] / sizes[0]) * (NONZEROS[1] / sizes[1]) * sums[0] * sums[1]
    return total + 0.01


def _top_eigenvalue(matvec, k: int) -> float:
    from scipy.sparse.linalg import LinearOperator

    op = LinearOperator((k, k), matvec=matvec, dtype=float)
    return float(eigsh(op, k=1, which="LA", tol=1e-6, return_eigenvectors=False)[0])


def _trial(k: int, trial: int, seed: int, grid: dict) -> dict:
    """One data draw: every method x configuration; returns per-config losses."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        rng = np.random.default_rng(np.random.SeedSequence([seed, k, trial]))
        n_pub = int(round(PUB_PER_DIM * k))
        X, y, theta_star = fig41_data(k, N_PRIV, rng)
        X_pub, y_pub, _ = fig41_data(k, n_pub, rng, theta_star)
        mirror = linear_regression_mirror_map(X_pub, y_pub, ridge=RIDGE, normalize=True)
        warm = mirror.minimizer()
        H = mirror.hessian * mirror.scale  # the ridge-regularized public Hessian
        top_gd = _top_eigenvalue(lambda v: H @ v, k)
        top_pda = _top_eigenvalue(lambda v: mirror.precondition(H @ v), k)
        setups = {
            "dpgd_cold": (EuclideanMirrorMap(k), np.zeros(k), top_gd),
            "dpgd_warm": (EuclideanMirrorMap(k, warm), warm, top_gd),
            "pda_dpmd": (mirror, warm, top_pda),
        }
        loss = SquaredLoss()
        out = {}
        for method, (mmap, theta0, top) in setups.items():
            mgrid = grid["methods"][method]
            fracs = np.asarray(mgrid["rate_fractions"], dtype=float)
            clips = np.asarray(mgrid["clips"], dtype=float)
            frac_grid, clip_grid = (a.ravel() for a in np.meshgrid(fracs, clips, indexing="ij"))
            for steps in mgrid["steps"]:
                z = pda_noise_multiplier(EPSILON, DELTA, steps, NEIGHBOURS)
                rates = frac_grid * 2.0 / top
                with np.errstate(over="ignore", invalid="ignore"):
                    avg, last = pda_dpmd_runs(
                        X,
                        y,
                        loss,
                        mmap,
                        theta0=theta0,
                        noise_multiplier=z,
                        clips=clip_grid,
                        learning_rates=rates,
                        steps=steps,
                        rng=rng,
                    )
                for kind, thetas in (("avg", avg), ("last", last)):
                    with np.errstate(over="ignore", invalid="ignore"):
                        emp = np.mean((y[:, None] - X @ thetas.T) ** 2, axis=0)
                        pop = population_mse(thetas, theta_star)
                    for j in range(frac_grid.size):
                        key = (method, steps, float(frac_grid[j]), float(clip_grid[j]), kind)
                        e = float(emp[j]) if np.isfinite(emp[j]) else math.inf
                        p = float(pop[j]) if np.isfinite(pop[j]) else math.inf
                        out[key] = (e, p)
        out[("_meta",)] = {
            "top_gd": top_gd,
            "top_pda": top_pda,
            "lambda_reg": mirror.scale,
            "warm_population_mse": float(population_mse(warm, theta_star)[0]),
        }
        return {"k": k, "trial": trial, "results": out}


def _ci(values) -> tuple[float, float]:
    arr = np.asarray(values, dtype=float)
    se = arr.std(ddof=1) / math.sqrt(arr.size) if arr.size > 1 else 0.0
    return float(arr.mean()), float(1.96 * se)


def reproduce_ganesh_fig4_1(
    out: Path,
    quick: bool = False,
    trials: int | None = None,
    *,
    dims: tuple[int, ...] | None = None,
    seed: int = 2022,
    workers: int | None = None,
    progress: bool = True,
) -> dict:
    """Run Figure 4.1 and write ``ganesh_fig4_1[_quick].{csv,json,png}`` into ``out``.

    ``quick``: k = 500, 3 trials, a 2 x 2 x 2 grid — a smoke run of the pipeline
    (under a minute), not the thesis's numbers.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    grid = dict(QUICK if quick else FULL)
    if trials is not None:
        grid["trials"] = int(trials)
    if dims is not None:
        grid["dims"] = tuple(dims)
    jobs = [(k, t) for k in grid["dims"] for t in range(grid["trials"])]
    jobs.sort(key=lambda j: -j[0])  # largest first: better load balance
    workers = workers or min(2, os.cpu_count() or 1, len(jobs))
    from tqdm import tqdm

    per_k: dict[int, list[dict]] = {k: [] for k in grid["dims"]}
    bar = tqdm(total=len(jobs), desc="fig4.1 (k, trial) runs", disable=not progress)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_trial, k, t, seed, grid) for k, t in jobs]
        for fut in as_completed(futures):
            res = fut.result()
            per_k[res["k"]].append(res["results"])
            bar.update(1)
    bar.close()
    rows = []
    for k in grid["dims"]:
        results = per_k[k]
        keys = [key for key in results[0] if key[0] != "_meta"]
        for method in METHODS:
            mine = [key for key in keys if key[0] == method]
            best = min(mine, key=lambda key: np.mean([r[key][0] for r in results]))
            emp_mean, emp_ci = _ci([r[best][0] for r in results])
            pop_mean, pop_ci = _ci([r[best][1] for r in results])
            rows.append(
                {
                    "k": k,
                    "method": method,
                    "empirical_mse": emp_mean,
                    "empirical_ci95": emp_ci,
                    "population_mse": pop_mean,
                    "population_ci95": pop_ci,
                    "steps": best[1],
                    "rate_fraction": best[2],
                    "clip": best[3],
                    "iterate": best[4],
                    "trials": len(results),
                }
            )
        warm_pop = [r[("_meta",)]["warm_population_mse"] for r in results]
        rows.append(
            {
                "k": k,
                "method": "public_only",
                "empirical_mse": math.nan,
                "empirical_ci95": math.nan,
                "population_mse": _ci(warm_pop)[0],
                "population_ci95": _ci(warm_pop)[1],
                "steps": 0,
                "rate_fraction": math.nan,
                "clip": math.nan,
                "iterate": "",
                "trials": len(results),
            }
        )
    elapsed = time.perf_counter() - start
    name = "ganesh_fig4_1_quick" if quick else "ganesh_fig4_1"
    with (out / f"{name}.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    summary = {
        "figure": "Ganesh's thesis (UC Berkeley EECS-2022-53) Fig. 4.1",
        "quick": quick,
        "grid": {key: list(val) if isinstance(val, tuple) else val for key, val in grid.items()},
        "epsilon": EPSILON,
        "delta": DELTA,
        "neighbours": NEIGHBOURS,
        "n_priv": N_PRIV,
        "seconds": elapsed,
        "rows": rows,
    }
    (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
    _plot(out / f"{name}.png", rows, grid["dims"])
    return summary


def _plot(path: Path, rows: list[dict], dims) -> None:
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    panels = (("dpgd_cold", "dpgd_warm"), ("dpgd_warm", "pda_dpmd"))
    for ax, methods, title in zip(
        axes, panels, ("(a) cold vs warm start", "(b) warm DP-GD vs PDA-DPMD"), strict=True
    ):
        for method in methods:
            sel = [r for r in rows if r["method"] == method]
            ax.errorbar(
                [r["k"] for r in sel],
                [r["empirical_mse"] for r in sel],
                yerr=[r["empirical_ci95"] for r in sel],
                marker="o",
                capsize=3,
                label=LABELS[method],
            )
        ax.axhline(0.01, color="gray", ls=":", lw=1, label="optimal population loss")
        ax.set_xlabel("dimension k")
        ax.set_ylabel("empirical loss (MSE)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.suptitle(
        r"Fig. 4.1 reproduction: $\epsilon=1$, $\delta=10^{-5}$, "
        f"$n_{{priv}}$={N_PRIV}, $n_{{pub}}$=1.5k, mean $\\pm$ 95% CI",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def posterior_adult_example(
    trials: int = 5,
    epsilon: float = EPSILON,
    delta: float = DELTA,
    lam: float = 1.0,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """DP logistic regression by posterior sampling on Adult, next to AMP.

    AMP is Algorithm 1 of Redberg, Koskela & Wang (arXiv 2401.00583).

    Posterior sampling: :func:`dpconvex.sampling.posterior_sample` with the
    composition accounting (ULA from 0, horizon 5/lam, step 0.5/M), lam fixed a
    priori; AMP: ``DPLogisticRegression`` with its defaults. Both at (epsilon,
    delta) on the bundled Adult data (80/20 split, seed 0), ``trials`` fresh
    noise draws each. Also reports what the thesis route (Thm 42 with explicit
    constants, chained privacy) would need: its number of ULA steps.
    """
    from tqdm import tqdm

    from ..datasets import load_adult
    from ..losses import LogisticLoss
    from ..mechanisms import add_intercept, design_bound, transform_rows
    from ..models import DPLogisticRegression
    from ..sampling import plan_composition, plan_thesis, posterior_sample

    data = load_adult()
    X_train, X_test, y_train, y_test = data.split(0.2, seed=0)
    positive = np.max(y_train)
    ys = np.where(y_train == positive, 1.0, -1.0)
    yt = np.where(y_test == positive, 1.0, -1.0)
    Xt = add_intercept(transform_rows(np.asarray(X_test, float), "normalize", 1.0), 1.0)
    R = design_bound("normalize", 1.0, True, 1.0)
    n, k = X_train.shape[0], X_train.shape[1] + 1
    seeds = np.random.SeedSequence(seed).spawn(2 * trials)
    rows = {"posterior": [], "amp": []}
    spent = {}
    start = time.perf_counter()
    for t in tqdm(range(trials), desc="Adult posterior vs AMP", disable=not progress):
        rel = posterior_sample(
            X_train,
            ys,
            epsilon=epsilon,
            delta=delta,
            lam=lam,
            random_state=np.random.default_rng(seeds[2 * t]),
        )
        rows["posterior"].append(float(np.mean(np.sign(Xt @ rel.theta) == yt)))
        spent["posterior"] = rel.info["epsilon"]
        amp = DPLogisticRegression(
            epsilon=epsilon, delta=delta, random_state=np.random.default_rng(seeds[2 * t + 1])
        )
        amp.fit(X_train, y_train)
        rows["amp"].append(float(amp.score(X_test, y_test)))
        spent["amp"] = float(amp.epsilon_)
    comp = plan_composition(n, LogisticLoss(), lam, R, epsilon, delta)
    thesis = plan_thesis(n, k, LogisticLoss(), lam, R, epsilon, delta)
    return {
        "epsilon": epsilon,
        "delta": delta,
        "lam": lam,
        "trials": trials,
        "posterior_accuracy": _ci(rows["posterior"]),
        "amp_accuracy": _ci(rows["amp"]),
        "posterior_epsilon_spent": spent["posterior"],
        "amp_epsilon_spent": spent["amp"],
        "posterior_steps": comp["steps"],
        "posterior_beta": comp["beta"],
        "condition_number": comp["condition_number"],
        "thesis_steps": float(thesis["steps"]),
        "thesis_alpha": thesis["alpha"],
        "thesis_condition_number": thesis["condition_number"],
        "accuracies": rows,
        "seconds": time.perf_counter() - start,
    }
