"""Opacus DP-SGD (CPU torch) next to our DPLogisticRegression(method="dpsgd"), identical settings.

Run in the Opacus environment (see README.md in this folder):

    python benchmarks/peers/bench_opacus.py [--eps 1] [--repeats 3] [--markdown FILE] [--check]

Setting, the same for both: logistic regression on UCI Adult (bundled, 80/20,
split seed 0), rows scaled to unit L2 norm with a constant-1 column appended
(Opacus gets exactly these rows and a bias-free ``nn.Linear(d + 1, 1)`` started
at zero, as ours starts at zero); per-example clipping at C = sqrt(2); Poisson
sampling at rate q = 256 / n; ``steps`` = ceil(60 / q) steps; Gaussian noise of
std z C added to the sum of clipped gradients, divided by q n; Adam (lr 0.02,
betas 0.9 / 0.999, eps 1e-8). z, q, steps and C are read from our fitted model's
``mechanism_params_`` so both run the same noise multiplier for the same number
of steps. Opacus runs from its own building blocks (GradSampleModule with
hooks, DPOptimizer with ``expected_batch_size = q n``, DPDataLoader with
``sample_rate = q``) because ``PrivacyEngine.make_private`` would reset the rate
to 1 / ceil(n / 256) and the divisor to int(n q).

Two Opacus loops are timed: the standard one with ``DPDataLoader`` over a
``TensorDataset``, and a faster one that draws the same Poisson mask with
``torch.rand(n) < q`` and indexes the in-memory tensors (no DataLoader). Our
time is the whole ``fit`` (row transform, PLD accounting, training);
Opacus times start after the numpy preprocessing and exclude calibration. All
runs of one repeat use the same seed and are timed in the same process; the
ratio is Opacus median time / our median time.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from opacus import GradSampleModule  # noqa: E402
from opacus.data_loader import DPDataLoader  # noqa: E402
from opacus.optimizers import DPOptimizer  # noqa: E402
from peercommon import (  # noqa: E402
    DELTA,
    adult_split,
    header_lines,
    mean_se,
    median,
    report,
    run_stamp,
    timed,
    unit_rows_with_one,
)

from dpconvex import DPLogisticRegression  # noqa: E402
from dpconvex.accounting import (  # noqa: E402
    PrivacyAccountant,
    accountants,
    dpsgd_noise_multiplier,
    pld_grid,
)

torch.set_num_threads(1)
# Opacus's hooks fire on a module whose input needs no gradient: harmless, and expected here.
warnings.filterwarnings("ignore", message="Full backward hook is firing")

LOOPS = ("ours", "opacus-dataloader", "opacus-tensor")
HEADERS = ["eps", "implementation", "test acc %", "fit s (median)", "Opacus / ours"]


def fit_ours(eps: float, seed: int, X, y):
    model = DPLogisticRegression(epsilon=eps, delta=DELTA, method="dpsgd", random_state=seed)
    accountants._RESULTS.clear()  # every fit cold: its accounting is computed, not recalled
    accountants._COMPOSED.clear()
    seconds, _ = timed(lambda: model.fit(X, y))
    assert model.epsilon_ <= eps
    return seconds, model


def accounting_seconds(eps: float, model) -> float:
    """Time of the two accountant calls inside our fit, repeated outside it.

    The noise calibration (the estimator's call: PLD, rtol 2e-4) and the epsilon
    reported for the fitted event (``epsilon_``, on the calibration's grid), cold:
    the process-wide accounting caches are cleared first, as in a fresh process.
    """
    p = model.mechanism_params_
    q, steps = p["sampling_rate"], p["steps"]
    accountants._RESULTS.clear()
    accountants._COMPOSED.clear()
    t_calibrate, z = timed(
        lambda: dpsgd_noise_multiplier(eps, DELTA, q, steps, accounting="pld", rtol=2e-4)
    )
    assert abs(z - p["noise_multiplier"]) <= 1e-9 * z
    t_report, _ = timed(
        lambda: (
            PrivacyAccountant("pld", value_discretization_interval=pld_grid(eps))
            .compose(model.dp_event_)
            .get_epsilon(DELTA)
        )
    )
    return t_calibrate + t_report


def private_linear_model(d: int, params: dict, n: int):
    """Bias-free linear layer at zero, wrapped for per-sample gradients, and its DP Adam."""
    layer = torch.nn.Linear(d, 1, bias=False)
    torch.nn.init.zeros_(layer.weight)
    module = GradSampleModule(layer)
    optimizer = DPOptimizer(
        torch.optim.Adam(module.parameters(), lr=params["learning_rate"]),
        noise_multiplier=params["noise_multiplier"],
        max_grad_norm=params["clip"],
        expected_batch_size=params["sampling_rate"] * n,
        loss_reduction="mean",
    )
    return module, optimizer


def dp_step(module, optimizer, xb, yb) -> None:
    optimizer.zero_grad()
    logits = module(xb).squeeze(1)
    torch.nn.functional.binary_cross_entropy_with_logits(logits, yb).backward()
    optimizer.step()


def dataloader_batches(X, y, q: float, steps: int, generator):
    """``steps`` Poisson batches from Opacus's DPDataLoader, across as many epochs as needed."""
    loader = DPDataLoader(torch.utils.data.TensorDataset(X, y), sample_rate=q, generator=generator)
    done = 0
    while done < steps:
        for batch in loader:
            yield batch
            done += 1
            if done == steps:
                return


def tensor_batches(X, y, q: float, steps: int, generator):
    """The same Poisson batches (each row kept with probability q) by indexing tensors."""
    n = X.shape[0]
    for _ in range(steps):
        rows = torch.nonzero(torch.rand(n, generator=generator) < q).squeeze(1)
        yield X[rows], y[rows]


def train_opacus(loop: str, A: np.ndarray, y: np.ndarray, params: dict, seed: int):
    """One Opacus run on the augmented rows A; returns the weight vector (A.shape[1],)."""
    torch.manual_seed(seed)  # DPOptimizer draws its noise from the global generator
    generator = torch.Generator().manual_seed(seed)
    X = torch.from_numpy(A.astype(np.float32))
    Y = torch.from_numpy(y.astype(np.float32))
    module, optimizer = private_linear_model(A.shape[1], params, A.shape[0])
    batches = dataloader_batches if loop == "opacus-dataloader" else tensor_batches
    for xb, yb in batches(X, Y, params["sampling_rate"], params["steps"], generator):
        dp_step(module, optimizer, xb, yb)
    return module._module.weight.detach().double().numpy().ravel()


def accuracy(weights: np.ndarray, A_test: np.ndarray, y_test: np.ndarray) -> float:
    return 100 * float(np.mean((A_test @ weights > 0) == (y_test == 1)))


def one_repeat(eps: float, seed: int, data, augmented) -> dict:
    """Ours, then each Opacus loop at our calibrated (z, q, steps, C); seconds and accuracy."""
    X_train, X_test, y_train, y_test = data
    A_train, A_test = augmented
    seconds, model = fit_ours(eps, seed, X_train, y_train)
    out = {"ours": (seconds, 100 * model.score(X_test, y_test)), "params": model.mechanism_params_}
    out["accounting"] = accounting_seconds(eps, model)
    for loop in LOOPS[1:]:
        seconds, w = timed(lambda lp=loop: train_opacus(lp, A_train, y_train, out["params"], seed))
        out[loop] = (seconds, accuracy(w, A_test, y_test))
    return out


def rows_for(eps: float, repeats: list[dict]) -> list[list[str]]:
    t_ours = median(r["ours"][0] for r in repeats)
    rows = []
    for loop in LOOPS:
        seconds = median(r[loop][0] for r in repeats)
        acc, se = mean_se([r[loop][1] for r in repeats])
        ratio = "-" if loop == "ours" else f"{seconds / t_ours:.1f}x"
        rows.append([f"{eps:g}", loop, f"{acc:.2f} +- {se:.2f}", f"{seconds:.2f}", ratio])
    return rows


def check_reduction(A: np.ndarray, y: np.ndarray, q: float, clip: float) -> float:
    """Max |Opacus - numpy| of one noiseless clipped, averaged gradient at a random theta.

    Checks that Opacus's per-sample clipping and mean reduction equal ours:
    sum_i clip_C(g_i) / (q n) with g_i = (sigmoid(x_i . theta) - y_i) x_i.
    """
    rng = np.random.default_rng(0)
    theta = rng.normal(0.0, 3.0, A.shape[1])
    rows = np.flatnonzero(rng.random(A.shape[0]) < q)
    params = {"learning_rate": 1.0, "noise_multiplier": 0.0, "clip": clip, "sampling_rate": q}
    module, optimizer = private_linear_model(A.shape[1], params, A.shape[0])
    with torch.no_grad():
        module._module.weight.copy_(torch.from_numpy(theta)[None, :].float())
    xb = torch.from_numpy(A[rows].astype(np.float32))
    optimizer.zero_grad()
    loss = torch.nn.functional.binary_cross_entropy_with_logits(
        module(xb).squeeze(1), torch.from_numpy(y[rows].astype(np.float32))
    )
    loss.backward()
    optimizer.pre_step()  # clip, add (zero) noise, scale; no parameter update
    opacus_grad = module._module.weight.grad.double().numpy().ravel()
    xr = A[rows]
    deriv = 1.0 / (1.0 + np.exp(-(xr @ theta))) - y[rows]
    gnorm = np.abs(deriv) * np.linalg.norm(xr, axis=1)
    factor = np.minimum(1.0, clip / np.maximum(gnorm, 1e-300))
    ours = xr.T @ (deriv * factor) / (q * A.shape[0])
    return float(np.max(np.abs(opacus_grad - ours)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0])
    parser.add_argument("--repeats", type=int, default=3, help="runs (seeds 0..R-1) per loop")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table as markdown")
    parser.add_argument("--check", action="store_true", help="also check clipping/reduction")
    args = parser.parse_args()
    stamp = run_stamp()

    data = adult_split()
    augmented = (unit_rows_with_one(data[0]), unit_rows_with_one(data[1]))
    repeats = {
        eps: [one_repeat(eps, s, data, augmented) for s in range(args.repeats)] for eps in args.eps
    }
    p = repeats[args.eps[0]][0]["params"]
    n, d = data[0].shape
    settings = [
        f"data: UCI Adult (bundled), {n} train / {data[1].shape[0]} test rows, {d} features "
        "+ constant 1, rows scaled to unit L2 norm",
        f"DP-SGD: Poisson q = 256/n = {p['sampling_rate']:.6f}, steps = {p['steps']} (60 epochs), "
        f"clip C = {p['clip']:.6f}, Adam lr {p['learning_rate']}, start at 0, delta = {DELTA:g}",
        "noise multiplier z (ours, PLD calibration): "
        + ", ".join(
            f"eps {e:g}: {r[0]['params']['noise_multiplier']:.4f}" for e, r in repeats.items()
        ),
        f"Opacus: GradSampleModule(hooks) + DPOptimizer(Adam), float32; torch threads "
        f"{torch.get_num_threads()}; ours float64 numpy",
        f"{args.repeats} repeats (seeds) per loop, all in this one process",
    ]
    if args.check:
        for clip in (p["clip"], p["clip"] / 4):  # C / 4 makes clipping bind on most rows
            err = check_reduction(augmented[0], data[2], p["sampling_rate"], clip)
            settings.append(
                f"check at clip {clip:.4f}: max |Opacus - ours| of one noiseless clipped "
                f"mean gradient = {err:.2e}"
            )
    lines = header_lines(
        "Opacus vs dpconvex DP-SGD on UCI Adult",
        settings,
        ("dpconvex", "opacus", "torch", "numpy", "scipy", "dp-accounting"),
        stamp,
    )
    rows = [row for eps, reps in repeats.items() for row in rows_for(eps, reps)]
    notes = [
        "'Opacus / ours': Opacus median fit time divided by ours (the project target is >= 10x).",
        "Our time includes PLD calibration of z; Opacus is handed z and does no accounting.",
        "Our accounting alone (calibrating z + reporting epsilon_, timed again outside the "
        "fit), median: "
        + ", ".join(
            f"eps {e:g}: {median(r['accounting'] for r in reps):.2f} s"
            for e, reps in repeats.items()
        )
        + ".",
    ]
    report(lines, HEADERS, rows, args.markdown, notes)


if __name__ == "__main__":
    main()
