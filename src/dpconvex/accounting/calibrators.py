"""Noise calibration for the Gaussian mechanism, DP-SGD and AMP.

All of them go through :func:`dpconvex.accounting.calibration.calibrate`, so the
epsilon each reports for the returned parameters never exceeds the target.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

from .. import _validation as v
from .caches import search_hints, stored_answers_read
from .calibration import CalibrationError, calibrate
from .events import (
    AmpDpEvent,
    GaussianDpEvent,
    SelfComposedDpEvent,
    dpsgd_event,
    tuned_event,
)
from .gaussian_calibration import (
    DEFAULT_PLD_GRID,
    check_epsilon,
    clt_mu,
    clt_noise_multiplier,
    gaussian_sigma,
    model_search,
    pld_grid,
)
from .limits import LARGEST, bounded, check_count
from .pld import SEARCH_GRID_POINTS, GridTooLargeError, grid_cap
from .privacy_accountant import PrivacyAccountant

#: The AMP settings of Redberg, Koskela & Wang (arXiv 2401.00583), §5, for logistic loss on
#: unit rows plus a bias: ||(x, 1)|| <= sqrt 2 so C = L = sqrt 2, beta = 1/4 * 2.
AMP_DEFAULTS = {
    "beta": 0.5,
    "lipschitz": math.sqrt(2.0),
    "tau": 0.01,
    "sigma_out": 0.15,
    "noise_factor": 1.3,
}


def _epsilon_of(event, delta: float, accounting: str, orders=None, h: float = 1e-4) -> float:
    accountant = PrivacyAccountant(accounting, orders=orders, value_discretization_interval=h)
    return accountant.compose(event).get_epsilon(delta)


def _delta_of(event, epsilon: float, accounting: str, orders=None, h: float = 1e-4) -> float:
    """delta at the target epsilon: for a monotone profile, delta(eps*) <= delta* exactly
    when eps(delta*) <= eps*, and dp_accounting computes this direction vectorized."""
    accountant = PrivacyAccountant(accounting, orders=orders, value_discretization_interval=h)
    return accountant.compose(event).get_delta(epsilon)


def _check_rdp_can_reach(epsilon: float, delta: float, orders=None) -> None:
    """Refuse at once a target that RDP accounting cannot certify with any noise.

    Converting RDP to (epsilon, delta) costs at least the conversion term at the largest
    order even when the Renyi divergences vanish; a mechanism with (almost) no privacy
    loss, a Gaussian of noise multiplier 1e8, shows that floor. Below it no noise
    multiplier meets the target, and the search would otherwise grow the noise without
    end (minutes inside dp_accounting's series) before failing.
    """
    if _delta_of(GaussianDpEvent(1e8), epsilon, "rdp", orders) > delta:
        raise CalibrationError(
            f"RDP accounting cannot certify epsilon={epsilon:g} at delta={delta:g} with any "
            "noise (its conversion to (epsilon, delta) alone costs more); use PLD accounting "
            "or a larger epsilon"
        )


#: Evaluations the model-guided search may take before it hands over to :func:`calibrate`.
MODEL_SEARCH_EVALUATIONS = 8


def dpsgd_noise_multiplier(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    tuning_mu: float | None = None,
    tuning_shape: float = math.inf,
    accounting: str = "auto",
    orders=None,
    rtol: float = 1e-5,
) -> float:
    """Smallest DP-SGD noise multiplier meeting (epsilon, delta), with or without honest tuning.

    Without tuning the event is ``steps`` Poisson-subsampled Gaussians (PLD by
    default). With ``tuning_mu`` the event is Papernot-Steinke repeat-and-select
    with a random number of runs of mean ``tuning_mu`` (Poisson for
    ``tuning_shape = inf``, else truncated negative binomial), priced by RDP.
    ``orders`` are passed to :class:`PrivacyAccountant` for RDP accounting.

    PLD accounting uses the grid step :func:`pld_grid` (epsilon). Its search is
    guided by the central-limit (mu-GDP) model of DP-SGD, corrected by each
    accountant call (:func:`~dpconvex.accounting.gaussian_calibration.model_search`):
    two to four PLD compositions where a bracketing search took ten to twenty; it hands
    over to that search if the model fails. The answer is always a noise level the
    accountant was asked about and found within budget.
    """
    epsilon = check_epsilon(epsilon)
    delta = v.probability_open("delta", delta)

    def make(z: float):
        event = dpsgd_event(z, sampling_rate, steps)
        return event if tuning_mu is None else tuned_event(event, tuning_mu, tuning_shape)

    make(1.0)  # validate the other arguments before searching
    if accounting == "rdp" or tuning_mu is not None:
        _check_rdp_can_reach(epsilon, delta, orders)
    guess = clt_noise_multiplier(1.0 / gaussian_sigma(epsilon, delta, 1.0), sampling_rate, steps)
    guess = min(max(guess, 1e-3), 1e12)  # a start only: the search moves as far as needed
    model = None
    if tuning_mu is None:
        model = (
            lambda z: clt_mu(z, sampling_rate, steps),
            lambda mu: clt_noise_multiplier(mu, sampling_rate, steps),
        )
    return _noise_multiplier(
        make, epsilon, delta, accounting, orders, pld_grid(epsilon), (0.9 * guess, 1.1 * guess),
        floor=1e-6, rtol=rtol, check_default_grid=tuning_mu is None, model=model,
    )  # fmt: skip


def _noise_multiplier(
    make, epsilon, delta, accounting, orders, grid, bracket, *, floor, rtol,
    check_default_grid, model=None,
) -> float:  # fmt: skip
    """Smallest z with delta(epsilon) <= delta for the events ``make(z)``, on ``grid``.

    A user checks with PrivacyAccountant() on its default grid, coarser (so more
    pessimistic) than ``grid`` below epsilon = 1: with ``check_default_grid`` the
    release must meet the target there too (the wide DP-SGD calibration test found
    0.0625158 > 0.0625 at q = 0.0625). The coarser grid almost always binds, so the
    search runs there and the finer grid checks the result. ``model`` (mu(z), z(mu))
    guides the search with PLD accounting
    (:func:`~dpconvex.accounting.gaussian_calibration.model_search`).

    The search runs on approximate answers (Gaussians composed by a plain FFT power)
    and, at first, on answers stored by the on-disk cache (:func:`search_hints`); the
    z it returns is then checked on every grid by the certified accountant, computed
    in this process, and only a z that passes is returned. Stored answers that
    misled the search (it failed, or its answer fails their recomputation) are
    dropped and the search repeated; an approximation that fell short of the
    certified answer lowers the search's target by their ratio.
    """

    def delta_at(h: float):
        return lambda z: _delta_of(make(z), epsilon, accounting, orders, h)

    def searched_delta_at(h: float):
        """delta_at for the search: a candidate whose PLD would exceed the search's grid
        cap counts as missing the budget (inf), so the search moves to more noise, the
        safe side, instead of pricing huge grids (extreme public arguments)."""
        price = delta_at(h)

        def cost(z: float) -> float:
            try:
                return price(z)
            except GridTooLargeError:
                return math.inf

        return cost

    # The search runs on approximate answers (and on stored ones, at first): a
    # calibration composes the certified PLD only to check the noise it returns.
    aim = {"target": delta, "disk": True}

    def search(h: float, lo: float, hi: float, approximate: bool = True) -> float:
        target = aim["target"] if approximate else delta
        hints = search_hints(disk=aim["disk"]) if approximate else contextlib.nullcontext()
        with hints, grid_cap(SEARCH_GRID_POINTS):
            if model is not None and accounting != "rdp":
                start = math.sqrt(lo * hi)
                found = model_search(
                    searched_delta_at(h),
                    epsilon,
                    target,
                    *model,
                    start,
                    rtol,
                    MODEL_SEARCH_EVALUATIONS,
                )
                if found is not None:
                    return found
            return calibrate(
                searched_delta_at(h), target, lo, hi, decreasing=True, floor=floor,
                ceiling=LARGEST, rtol=rtol,
            )  # fmt: skip

    def guided_search(h: float, lo: float, hi: float) -> float:
        """:func:`search`, again without the disk cache if stored answers misled it."""
        stored = stored_answers_read()
        try:
            z = search(h, lo, hi)
        except ValueError:  # CalibrationError included: no noise found, or out of range
            if stored_answers_read() == stored:
                raise
            aim["disk"] = False
            return search(h, lo, hi)
        if stored_answers_read() > stored and _misled(delta_at(h), z, aim["target"], rtol):
            aim["disk"] = False  # stored answers misled the search (forged, or stale): again
            z = search(h, lo, hi)
        return z

    grids = [grid]
    if check_default_grid and accounting != "rdp" and grid < DEFAULT_PLD_GRID:
        grids = [DEFAULT_PLD_GRID, grid]
    z = guided_search(grids[0], *bracket)
    for attempt in range(4):  # a rise of z on one grid is checked again on the others
        # the check that decides: certified, computed here, never read from the disk cache
        missed = [h for h in grids if delta_at(h)(z) > delta]
        if not missed:
            return z
        h, aim["disk"] = missed[0], False
        certified = delta_at(h)(z)
        with search_hints(disk=False):
            approximate = delta_at(h)(z)
        if attempt < 2 and 0 < approximate < certified:
            # the approximation fell short of the certified answer near z: aim lower by
            # their ratio (and 10 rtol, a tolerance step in z), then check again
            ratio = approximate / certified * (1.0 - 10.0 * rtol)
            aim["target"] = min(aim["target"], delta * ratio)
            z = guided_search(h, z, bracket[1] / bracket[0] * z)
        else:
            z = search(h, z, bracket[1] / bracket[0] * z, approximate=False)
    raise CalibrationError(f"no noise multiplier met epsilon={epsilon:g} on every grid")


def _misled(delta_at, z: float, delta: float, rtol: float) -> bool:
    """Whether a search's answer z, found on stored answers, fails their recomputation:
    z must meet ``delta`` and z / (1 + 2 rtol), below the search's last miss, must not.
    Approximate answers, computed here (cheap), before any certified check."""
    with search_hints(disk=False):
        return delta_at(z) > delta or delta_at(z / (1.0 + 2.0 * rtol)) <= delta


def gaussian_noise_multiplier(
    epsilon: float,
    delta: float,
    compositions: int = 1,
    *,
    accounting: str = "pld",
    value_discretization_interval: float | None = None,
) -> float:
    """Smallest noise multiplier z for ``compositions`` Gaussian mechanisms to meet (eps, delta).

    Unlike :func:`gaussian_sigma` (the exact analytic profile, Redberg et al., eq. B.1),
    this calibrates with the accountant that will report the privacy spent
    (PLD on the grid :func:`pld_grid` (epsilon), or RDP), so that report never
    exceeds the target. The analytic value brackets the search.
    """
    epsilon = check_epsilon(epsilon)
    delta = v.probability_open("delta", delta)
    k = check_count("compositions", compositions)
    h = (
        pld_grid(epsilon)
        if value_discretization_interval is None
        else (v.positive("value_discretization_interval", value_discretization_interval))
    )
    guess = math.sqrt(k) * gaussian_sigma(epsilon, delta, 1.0)

    def event(z: float):
        return GaussianDpEvent(z) if k == 1 else SelfComposedDpEvent(GaussianDpEvent(z), k)

    return _noise_multiplier(
        event, epsilon, delta, accounting, None, h, (0.95 * guess, 1.05 * guess),
        floor=1e-12, rtol=1e-8, check_default_grid=value_discretization_interval is None,
        model=(lambda z: math.sqrt(k) / z, lambda mu: math.sqrt(k) / mu),
    )  # fmt: skip


@dataclass(frozen=True)
class AmpCalibration:
    """Result of :func:`amp_parameters`: the event to run (once per composition) and its epsilon."""

    sigma: float
    lam: float
    epsilon: float
    delta: float
    sigma_gaussian: float
    accounting: str
    event: AmpDpEvent


def amp_parameters(
    epsilon: float,
    delta: float,
    *,
    accounting: str = "rdp",
    beta: float = AMP_DEFAULTS["beta"],
    lipschitz: float = AMP_DEFAULTS["lipschitz"],
    tau: float = AMP_DEFAULTS["tau"],
    sigma_out: float = AMP_DEFAULTS["sigma_out"],
    noise_factor: float = AMP_DEFAULTS["noise_factor"],
    lam: float | None = None,
    compositions: int = 1,
    value_discretization_interval: float | None = None,
    lam_growth: float = 1.05,
    max_grid_steps: int = 2000,
    rtol: float = 1e-6,
) -> AmpCalibration:
    """(sigma, lam) for Algorithm 1 by the rule of Redberg, Koskela & Wang (arXiv 2401.00583), §5.

    sigma_G = lipschitz * (analytic-Gaussian sigma for sensitivity 1); lam runs
    over the grid (2 beta / epsilon) * lam_growth^k, skipping lam <= beta, and the
    first lam whose calibrated sigma is <= noise_factor * sigma_G is taken; sigma
    is then the smallest noise meeting (epsilon, delta) at that lam. Because
    privacy loss falls as sigma grows, "calibrated sigma <= f sigma_G" is checked
    as "delta(epsilon) at f sigma_G <= delta". ``accounting="rdp"`` prices AMP by Thm 4.1
    with the improved conversion, as in the paper; ``"pld"`` by its privacy-loss
    distribution, which is tighter: at a given lam it needs less sigma, so the
    same rule stops at a smaller lam (less regularization) for a sigma of about
    the same size. Pass ``lam`` to skip the grid and calibrate sigma at that lam
    (then ``noise_factor`` only bounds the search and is not a stopping rule).
    With ``compositions = K`` the K-fold composition of the event meets the
    budget (one-vs-rest with K classes); sigma_G is then the Gaussian noise whose
    K-fold composition meets it.

    Unlike the authors' code, the returned lam is the one sigma was calibrated
    for (their loop returns 1.05 times it). All parameters are data-independent.
    """
    epsilon = check_epsilon(epsilon)
    delta = v.probability_open("delta", delta)
    if accounting not in ("rdp", "pld"):
        raise ValueError(f"accounting must be 'rdp' or 'pld', got {accounting!r}")
    beta = v.nonnegative("beta", beta)
    lipschitz = bounded("lipschitz", lipschitz)
    tau = bounded("tau", tau)
    sigma_out = bounded("sigma_out", sigma_out)
    noise_factor = bounded("noise_factor", noise_factor)
    lam_growth = v.finite("lam_growth", lam_growth)
    if lam_growth <= 1:
        raise ValueError(f"lam_growth must be > 1, got {lam_growth}")
    max_grid_steps = check_count("max_grid_steps", max_grid_steps)
    compositions = check_count("compositions", compositions)
    grid = (
        pld_grid(epsilon)
        if value_discretization_interval is None
        else v.positive("value_discretization_interval", value_discretization_interval)
    )
    sigma_gaussian = lipschitz * gaussian_sigma(epsilon, delta, math.sqrt(compositions))
    sigma_cap = noise_factor * sigma_gaussian

    def priced(sigma: float, lam: float):
        event = AmpDpEvent(sigma, lam, beta, lipschitz, tau, sigma_out)
        return event if compositions == 1 else SelfComposedDpEvent(event, compositions)

    def delta_at(sigma: float, lam: float) -> float:
        return _delta_of(priced(sigma, lam), epsilon, accounting, h=grid)

    # AMP's calibration takes milliseconds: every answer it uses is computed here (none
    # is read from the on-disk cache, none approximated)
    def result(lam: float, ceiling: float | None) -> AmpCalibration:
        sigma = calibrate(
            lambda s: delta_at(s, lam),
            delta,
            0.5 * sigma_cap,
            sigma_cap,
            decreasing=True,
            # a floor on sigma relative to the noise scale (sigma scales with lipschitz)
            floor=min(1e-6, 1e-6 * sigma_cap),
            ceiling=ceiling,
            rtol=rtol,
        )
        event = AmpDpEvent(sigma, lam, beta, lipschitz, tau, sigma_out)
        return AmpCalibration(
            sigma=sigma,
            lam=lam,
            epsilon=_epsilon_of(priced(sigma, lam), delta, accounting, h=grid),
            delta=delta,
            sigma_gaussian=sigma_gaussian,
            accounting=accounting,
            event=event,
        )

    if lam is not None:
        lam, _ = v.regularization_exceeds_smoothness(lam, beta)
        if delta_at(1e4 * sigma_cap, lam) > delta:
            raise CalibrationError(
                f"lam={lam} cannot reach epsilon={epsilon}: even sigma = 1e4 * sigma_G misses it "
                f"(the Jacobian term -log(1 - beta/lam) = {-math.log1p(-beta / lam):.4g} is a "
                "floor on epsilon)"
            )
        return result(lam, 1e4 * sigma_cap)
    lam0 = (2.0 * beta / epsilon) if beta > 0 else 1.0 / epsilon
    if math.log(lam0) + (max_grid_steps - 1) * math.log(lam_growth) > math.log(LARGEST):
        raise ValueError(
            f"the lam grid {lam0:.3g} * {lam_growth:g}^k for k < max_grid_steps={max_grid_steps} "
            f"goes beyond {LARGEST:g}; lower max_grid_steps or lam_growth"
        )
    checked: dict[int, bool] = {}

    def feasible(k: int) -> bool:  # monotone in k: a larger lam only lowers the privacy loss
        if k not in checked:
            lam_k = lam0 * lam_growth**k
            checked[k] = lam_k > beta and delta_at(sigma_cap, lam_k) <= delta
        return checked[k]

    # the first feasible grid index, by exponential search then bisection (the same index a
    # linear scan finds, in O(log max_grid_steps) evaluations)
    last = max_grid_steps - 1
    hi = next(
        (k for k in (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if k <= last and feasible(k)),
        None,
    )
    if hi is None:
        if not feasible(last):
            raise CalibrationError(
                f"no lam on the grid reaches epsilon={epsilon} with sigma <= {noise_factor} * "
                f"sigma_G (even lam = {lam0 * lam_growth**last:.3g} misses it); raise "
                "noise_factor or epsilon"
            )
        hi = last
    lo = max((k for k in checked if not checked[k] and k < hi), default=-1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return result(lam0 * lam_growth**hi, sigma_cap)
