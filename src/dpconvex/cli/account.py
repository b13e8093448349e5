"""``dpconvex account`` and ``dpconvex calibrate``: the privacy cost of chosen noise, and
noise for a target budget."""

from __future__ import annotations

import click

from ..accounting import (
    AMP_DEFAULTS,
    AmpDpEvent,
    ObjectivePerturbationDpEvent,
    PrivacyAccountant,
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
from .options import (
    COUNT,
    EPSILON,
    EPSILON_TARGET_HELP,
    NumberRange,
    _emit,
    _objpert_options,
    delta_option,
    json_option,
    positive,
)


@click.group()
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


@click.group()
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
