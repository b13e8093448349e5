"""Privacy accounting: the on-disk cache under attack, extreme public arguments, composition.

A release counts as covered when every number the library acts on or reports is the
certified accountant's: a calibrated noise meets its target when priced again from
scratch (and by dp_accounting's own accountant where it is fast enough), is no smaller
than the noise calibrated without any cache, and a reported epsilon is finite and
within its target. Refusals must be one-line ``ValueError``s (or the CLI's one line),
raised before any large allocation (each probe's peak memory is bounded by the harness).
"""

from __future__ import annotations

import json
import math
import os
import struct
import warnings

from . import Probe, Violation, run_cli

AREA = "accounting"
DPSGD = (8.0, 1e-5, 0.1, 20)  # epsilon, delta, sampling rate, steps: a quick calibration


# -- helpers ---------------------------------------------------------------------------


def _quiet():
    warnings.simplefilter("ignore")


def _forget():
    from dpconvex.accounting import accountants

    accountants._RESULTS.clear()
    accountants._COMPOSED.clear()
    accountants._BASE_PLDS.clear()


def _certified_epsilon(z, q, steps, delta, h=1e-4):
    from dpconvex.accounting import PrivacyAccountant, dpsgd_event

    _forget()
    return (
        PrivacyAccountant(value_discretization_interval=h)
        .compose(dpsgd_event(z, q, steps))
        .get_epsilon(delta)
    )


def _check_dpsgd(z, honest=None, args=DPSGD):
    """z meets the target, certified from scratch and by dp_accounting's own PLD accountant,
    and is within the search's tolerance of the honest noise."""
    from dp_accounting.pld import pld_privacy_accountant

    from dpconvex.accounting import dpsgd_event, pld_grid

    epsilon, delta, q, steps = args
    if not (math.isfinite(z) and z > 0):
        raise Violation(f"noise {z}")
    if honest is not None and z < honest * (1 - 1e-4):
        raise Violation(f"noise {z} below the honest calibration {honest}")
    spent = _certified_epsilon(z, q, steps, delta, pld_grid(epsilon))
    if not spent <= epsilon:
        raise Violation(f"certified epsilon {spent} > {epsilon}")
    theirs = pld_privacy_accountant.PLDAccountant(value_discretization_interval=pld_grid(epsilon))
    spent = theirs.compose(dpsgd_event(z, q, steps)).get_epsilon(delta)
    if not spent <= epsilon * (1 + 1e-4):
        raise Violation(f"dp_accounting's epsilon {spent} > {epsilon}")
    return z


def _honest(tmp, args=DPSGD):
    """An honest calibration that fills the cache in ``tmp``; returns (noise, folder)."""
    from dpconvex.accounting import dpsgd_noise_multiplier, use_disk_cache

    _quiet()
    folder = use_disk_cache(tmp / "cache")
    _forget()
    z = dpsgd_noise_multiplier(*args)
    _forget()  # as in a new process: only the disk remembers
    return z, folder


def _entries(folder):
    return [p for p in folder.iterdir() if not p.name.startswith(".")]


def _sign(folder, name, value):
    from dpconvex.accounting import disk_cache

    payload = b"DPCACC01" + struct.pack(">d", value)
    (folder / name).write_bytes(payload + disk_cache._tag(name, payload))


def _sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)


def _rewrite_all(folder, write):
    for path in _entries(folder):
        path.unlink()
        write(path)


def _after_damage(tmp, damage, args=DPSGD):
    """Calibrate honestly, damage every entry with ``damage(folder, path)``, calibrate again."""
    from dpconvex.accounting import dpsgd_noise_multiplier

    honest, folder = _honest(tmp, args)
    _rewrite_all(folder, lambda path: damage(folder, path))
    return _check_dpsgd(dpsgd_noise_multiplier(*args), honest, args)


def _claiming(value, args=DPSGD):
    """Every possible entry present, authentic, claiming ``value``."""

    def run(tmp):
        from dpconvex.accounting import disk_cache, dpsgd_noise_multiplier

        honest, _ = _honest(tmp, args)
        disk_cache.get = lambda key: value  # a forked child: patching touches nothing else
        return _check_dpsgd(dpsgd_noise_multiplier(*args), honest, args)

    return run


def _unsafe_directory(kind):
    def run(tmp):
        from dpconvex.accounting import disk_cache, dpsgd_noise_multiplier, use_disk_cache

        _quiet()
        real = tmp / "real"
        real.mkdir(mode=0o700)
        target = real
        if kind == "symlink":
            target = tmp / "link"
            target.symlink_to(real)
        elif kind == "world-writable":
            os.chmod(real, 0o777)
        elif kind == "other owner":
            if os.geteuid() != 0:
                return None  # only root can give a directory away
            os.chown(real, 65534, 65534)
        elif kind == "a file":
            real.rmdir()
            real.write_text("not a directory")
        elif kind == "unwritable parent":
            target = tmp / "ro" / "cache"
            (tmp / "ro").mkdir(mode=0o500)
        _forget()
        honest = dpsgd_noise_multiplier(*DPSGD)
        use_disk_cache(target)
        _forget()
        z = dpsgd_noise_multiplier(*DPSGD)
        if kind != "unwritable parent" and real.is_dir() and list(real.iterdir()):
            raise Violation("entries written to an unsafe directory")
        if disk_cache.stats["read"]:
            raise Violation("an entry was read from an unsafe directory")
        return _check_dpsgd(z, honest)

    return run


def _key_file(kind):
    def run(tmp):
        from dpconvex.accounting import disk_cache, dpsgd_noise_multiplier, use_disk_cache

        honest, folder = _honest(tmp)
        key = folder.parent / disk_cache.KEY_FILE
        if kind == "group-readable":
            os.chmod(key, 0o640)
        elif kind == "symlink":
            other = folder.parent / "other.key"
            other.write_bytes(key.read_bytes())
            os.chmod(other, 0o600)
            key.unlink()
            key.symlink_to(other)
        elif kind == "truncated":
            key.write_bytes(b"short")
        elif kind == "huge":
            key.unlink()
            _sparse(key, 2**33)
        elif kind == "replaced":  # a new key: every entry fails authentication
            key.unlink()
        use_disk_cache(folder.parent)
        _forget()
        z = dpsgd_noise_multiplier(*DPSGD)
        if kind != "replaced" and disk_cache.stats["read"]:
            raise Violation("an entry was read under an unsafe key file")
        return _check_dpsgd(z, honest)

    return run


def _forged_fit(tmp):
    """Review item 4's reproducer: a DP-SGD fit on a forged cache still meets its budget."""
    import numpy as np

    from dpconvex import DPLogisticRegression

    _quiet()
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 3)), rng.integers(0, 2, 300)

    def fit():
        model = DPLogisticRegression(method="dpsgd", epsilon=1.0, epochs=2, random_state=0)
        return model.fit(X, y)

    honest, folder = None, None
    from dpconvex.accounting import use_disk_cache

    folder = use_disk_cache(tmp / "cache")
    _forget()
    honest = fit().mechanism_params_["noise_multiplier"]
    _rewrite_all(folder, lambda path: _sign(folder, path.name, 0.0))
    _forget()
    model = fit()
    p = model.mechanism_params_
    args = (1.0, model.delta, p["sampling_rate"], p["steps"])
    _check_dpsgd(p["noise_multiplier"], honest, args)
    if not model.epsilon_ <= 1.0:
        raise Violation(f"epsilon_ {model.epsilon_}")


def _stored_epsilon_reported(tmp):
    from dp_accounting import dp_event

    from dpconvex.accounting import PrivacyAccountant, disk_cache, use_disk_cache

    _quiet()
    use_disk_cache(tmp / "cache")
    event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(3.0), 5)
    truth = PrivacyAccountant().compose(event)._epsilon(1e-6)
    disk_cache.put(PrivacyAccountant().compose(event)._query_key("epsilon", 1e-6), 1e-3)
    _forget()
    got = PrivacyAccountant().compose(event).get_epsilon(1e-6)
    if got != truth:
        raise Violation(f"reported {got}, computed {truth}")


def _changed_rule(tmp):
    import attr
    import numpy as np
    from dp_accounting import dp_event

    from dpconvex.accounting import PrivacyAccountant, register_rdp, use_disk_cache

    _quiet()
    use_disk_cache(tmp / "cache")
    toy = attr.s(frozen=True)(type("ToyDpEvent", (dp_event.DpEvent,), {}))()
    register_rdp(type(toy), lambda e, orders: np.asarray(orders) * 0.5)
    first = PrivacyAccountant("rdp").compose(toy).get_epsilon(1e-5)
    register_rdp(type(toy), lambda e, orders: np.asarray(orders) * 2.0)
    second = PrivacyAccountant("rdp").compose(toy).get_epsilon(1e-5)
    _forget()  # a new process with the changed rule
    third = PrivacyAccountant("rdp").compose(toy).get_epsilon(1e-5)
    if not (second > first and third == second):
        raise Violation(f"old rule served: {first}, {second}, {third}")


def _amp_forged(tmp):
    from dpconvex.accounting import amp_parameters, disk_cache, use_disk_cache

    _quiet()
    honest = amp_parameters(1.0, 1e-5, accounting="pld")
    use_disk_cache(tmp / "cache")
    disk_cache.get = lambda key: 0.0
    _forget()
    got = amp_parameters(1.0, 1e-5, accounting="pld")
    if (got.sigma, got.lam) != (honest.sigma, honest.lam) or not got.epsilon <= 1.0:
        raise Violation(f"AMP calibrated {got} on a forged cache, {honest} without")


def _environment_cache(value):
    def run(tmp):
        from dpconvex.accounting import disk_cache, dpsgd_noise_multiplier

        _quiet()
        os.environ[disk_cache.ENVIRONMENT_VARIABLE] = value.replace("TMP", str(tmp))
        disk_cache._state["configured"] = False
        _forget()
        return _check_dpsgd(dpsgd_noise_multiplier(*DPSGD))

    return run


# -- the command line ------------------------------------------------------------------


def _cli(argv, check=None):
    """Run ``dpconvex ARGV --json``; a success must pass ``check(result)``."""

    def run(tmp):
        _quiet()
        out = run_cli([*argv, "--json"])
        result = json.loads(out)
        for key, value in result.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise Violation(f"{key} = {value}")
        if check is not None:
            check(result)
        return result

    return run


def _epsilon_within(target):
    def check(result):
        if not result["epsilon"] <= target:
            raise Violation(f"reported epsilon {result['epsilon']} > {target}")

    return check


def _finite(result):
    if not (result["epsilon"] >= 0 and math.isfinite(result["epsilon"])):
        raise Violation(f"epsilon {result['epsilon']}")


def _cli_probes() -> list[Probe]:
    objpert = ["account", "objpert", "--lam", "1", "--beta", "0.25", "--lipschitz", "1"]
    amp = ["account", "amp", "--lam", "1", "--beta", "0.25", "--lipschitz", "1", "--tau", "0.01"]
    sgd = ["account", "dpsgd", "--sampling-rate", "0.01", "--delta", "1e-5"]
    cal = ["calibrate", "dpsgd", "--delta", "1e-5", "--sampling-rate", "0.01"]
    cases = {
        "objpert --compositions 1e6 --sigma 1e-3 (759 GiB before)": [
            *objpert, "--sigma", "1e-3", "--delta", "1e-5", "--compositions", "1000000"],
        "objpert --compositions 1e6 --sigma 10": [
            *objpert, "--sigma", "10", "--delta", "1e-5", "--compositions", "1000000"],
        "objpert --compositions 1e12": [
            *objpert, "--sigma", "10", "--delta", "1e-5", "--compositions", "1000000000000"],
        "objpert --sigma 1e-300": [*objpert, "--sigma", "1e-300", "--delta", "1e-5"],
        "objpert --sigma 1e300": [*objpert, "--sigma", "1e300", "--delta", "1e-5"],
        "objpert --delta 1e-300": [*objpert, "--sigma", "1", "--delta", "1e-300"],
        "objpert --delta 0": [*objpert, "--sigma", "1", "--delta", "0"],
        "objpert --compositions 0": [
            *objpert, "--sigma", "1", "--delta", "1e-5", "--compositions", "0"],
        "objpert --compositions 2.5": [
            *objpert, "--sigma", "1", "--delta", "1e-5", "--compositions", "2.5"],
        "objpert --lam 1e300": [
            "account", "objpert", "--lam", "1e300", "--beta", "0.25", "--lipschitz", "1",
            "--sigma", "1", "--delta", "1e-5"],
        "objpert --sigma nan": [*objpert, "--sigma", "nan", "--delta", "1e-5"],
        "amp --sigma-out 1e-300": [
            *amp, "--sigma", "1", "--sigma-out", "1e-300", "--delta", "1e-5"],
        "amp --tau 1e300": [
            "account", "amp", "--lam", "1", "--beta", "0.25", "--lipschitz", "1", "--tau",
            "1e300", "--sigma", "1", "--sigma-out", "1", "--delta", "1e-5"],
        "amp --sigma 1e-3": [*amp, "--sigma", "1e-3", "--sigma-out", "1", "--delta", "1e-5"],
        "dpsgd --steps 1e12": [*sgd, "--noise-multiplier", "1", "--steps", "1000000000000"],
        "dpsgd --steps 2^60": [
            *sgd, "--noise-multiplier", "1", "--steps", str(2**60)],
        "dpsgd --noise-multiplier 1e-300": [
            *sgd, "--noise-multiplier", "1e-300", "--steps", "100"],
        "dpsgd --noise-multiplier 1e300": [
            *sgd, "--noise-multiplier", "1e300", "--steps", "100"],
        "dpsgd --noise-multiplier 1e-5": [*sgd, "--noise-multiplier", "1e-5", "--steps", "100"],
        "dpsgd --sampling-rate 0": [
            "account", "dpsgd", "--sampling-rate", "0", "--delta", "1e-5",
            "--noise-multiplier", "1", "--steps", "100"],
        "dpsgd --sampling-rate 1": [
            "account", "dpsgd", "--sampling-rate", "1", "--delta", "1e-5",
            "--noise-multiplier", "1", "--steps", "100"],
        "dpsgd --sampling-rate 1e-300": [
            "account", "dpsgd", "--sampling-rate", "1e-300", "--delta", "1e-5",
            "--noise-multiplier", "1", "--steps", "100"],
        "dpsgd --sampling-rate 1.0000001": [
            "account", "dpsgd", "--sampling-rate", "1.0000001", "--delta", "1e-5",
            "--noise-multiplier", "1", "--steps", "100"],
        "dpsgd --delta 1e-300": [
            "account", "dpsgd", "--sampling-rate", "0.01", "--delta", "1e-300",
            "--noise-multiplier", "1", "--steps", "100"],
        "dpsgd --tuning-mu 1e300": [
            *sgd, "--noise-multiplier", "1", "--steps", "100", "--tuning-mu", "1e300"],
        "dpsgd --tuning-mu 1e12": [
            *sgd, "--noise-multiplier", "1", "--steps", "100", "--tuning-mu", "1e12"],
        "dpsgd --tuning-shape -0.5": [
            *sgd, "--noise-multiplier", "1", "--steps", "100", "--tuning-mu", "3",
            "--tuning-shape", "-0.5"],
    }  # fmt: skip
    checks = {
        "objpert --compositions 1e6 --sigma 10": _finite,
        "objpert --delta 1e-300": _finite,
        "dpsgd --steps 1e12": _finite,
        "dpsgd --sampling-rate 1": _finite,
        "dpsgd --sampling-rate 1e-300": _finite,
        "dpsgd --delta 1e-300": _finite,
        "dpsgd --tuning-mu 1e12": _finite,
        "dpsgd --noise-multiplier 1e-5": _finite,
    }
    out = [Probe(AREA, f"CLI account {k}", _cli(v, checks.get(k))) for k, v in cases.items()]
    calibrations = {
        "dpsgd --steps 1e12": ([*cal, "--epsilon", "1", "--steps", "1000000000000"], 1.0),
        "dpsgd --steps 1e9": ([*cal, "--epsilon", "1", "--steps", "1000000000"], 1.0),
        "dpsgd --epsilon 1e-300": ([*cal, "--epsilon", "1e-300", "--steps", "100"], None),
        "dpsgd --epsilon 1e300": ([*cal, "--epsilon", "1e300", "--steps", "100"], None),
        "dpsgd --delta 1e-300": (
            ["calibrate", "dpsgd", "--delta", "1e-300", "--sampling-rate", "0.01",
             "--epsilon", "1", "--steps", "1000"], 1.0),
        "dpsgd --sampling-rate 1e-300": (
            ["calibrate", "dpsgd", "--delta", "1e-5", "--sampling-rate", "1e-300",
             "--epsilon", "1", "--steps", "1000"], 1.0),
        "dpsgd --sampling-rate 1": (
            ["calibrate", "dpsgd", "--delta", "1e-5", "--sampling-rate", "1",
             "--epsilon", "1", "--steps", "1000"], 1.0),
        "dpsgd --tuning-mu 1e12": (
            [*cal, "--epsilon", "1", "--steps", "100", "--tuning-mu", "1e12"], 1.0),
        "amp --epsilon 1e-300": (["calibrate", "amp", "--epsilon", "1e-300", "--delta", "1e-5"],
                                 None),
        "amp --epsilon 1e300": (["calibrate", "amp", "--epsilon", "1e300", "--delta", "1e-5"],
                                None),
        "amp --delta 1e-300": (["calibrate", "amp", "--epsilon", "1", "--delta", "1e-300"], 1.0),
        "amp --lipschitz 1e300": (
            ["calibrate", "amp", "--epsilon", "1", "--delta", "1e-5", "--lipschitz", "1e300"],
            None),
        "amp --tau 1e-300": (
            ["calibrate", "amp", "--epsilon", "1", "--delta", "1e-5", "--tau", "1e-300"], None),
        "amp --sigma-out 1e-300": (
            ["calibrate", "amp", "--epsilon", "1", "--delta", "1e-5", "--sigma-out", "1e-300"],
            None),
        "amp --accounting pld --epsilon 1e-4": (
            ["calibrate", "amp", "--epsilon", "1e-4", "--delta", "1e-5", "--accounting", "pld"],
            1e-4),
        "amp --noise-factor 1e-300": (
            ["calibrate", "amp", "--epsilon", "1", "--delta", "1e-5", "--noise-factor", "1e-300"],
            None),
    }  # fmt: skip
    for name, (argv, target) in calibrations.items():
        check = _epsilon_within(target) if target is not None else None
        out.append(Probe(AREA, f"CLI calibrate {name}", _cli(argv, check)))
    return out


# -- the Python API ----------------------------------------------------------------------


def _api(build, check=None):
    def run(tmp):
        _quiet()
        value = build()
        if check is not None:
            check(value)
        return value

    return run


def _finite_value(value):
    value = getattr(value, "epsilon", value)
    if not (isinstance(value, float) and math.isfinite(value) and value >= 0):
        raise Violation(f"result {value!r}")


def _api_probes() -> list[Probe]:
    from dp_accounting import dp_event as de

    import dpconvex.accounting as A

    def eps(event, accounting="auto", count=1, delta=1e-5, **kw):
        return lambda: (
            A.PrivacyAccountant(accounting, **kw).compose(event, count).get_epsilon(delta)
        )

    def objpert(sigma=1.0, lam=1.0):
        return lambda: A.ObjectivePerturbationDpEvent(sigma, lam, 0.25, 1.0)

    def later(make, accounting="auto", count=1, delta=1e-5, **kw):
        return lambda: eps(make(), accounting, count, delta, **kw)()

    cases = {
        "PLD objpert x 1e6 at sigma 1e-3": (later(objpert(1e-3), "pld", 10**6), None),
        "auto objpert x 1e6 at sigma 1e-3 (RDP)": (later(objpert(1e-3), "auto", 10**6),
                                                   _finite_value),
        "auto objpert x 1e12 at sigma 10": (later(objpert(10.0), "auto", 10**12), _finite_value),
        "PLD Gaussian x 1e12 (one Gaussian)": (eps(de.GaussianDpEvent(1e6), "pld", 10**12),
                                               _finite_value),
        "auto Gaussian x 1e12 at noise 1 (RDP)": (eps(de.GaussianDpEvent(1.0), "auto", 10**12),
                                                  _finite_value),
        "PLD DP-SGD 1e12 steps": (later(lambda: A.dpsgd_event(1.0, 0.01, 10**12), "pld"), None),
        "auto DP-SGD 1e12 steps (RDP)": (later(lambda: A.dpsgd_event(1.0, 0.01, 10**12)),
                                         _finite_value),
        "DP-SGD noise 1e-300": (later(lambda: A.dpsgd_event(1e-300, 0.01, 100)), None),
        "DP-SGD noise 1e300": (later(lambda: A.dpsgd_event(1e300, 0.01, 100)), None),
        "DP-SGD sampling rate 1e-300": (later(lambda: A.dpsgd_event(1.0, 1e-300, 100)),
                                        _finite_value),
        "DP-SGD sampling rate 1 - 1e-16": (later(lambda: A.dpsgd_event(1.0, 1 - 1e-16, 100)),
                                           _finite_value),
        "DP-SGD sampling rate 0": (later(lambda: A.dpsgd_event(1.0, 0.0, 100)), None),
        "DP-SGD steps True": (later(lambda: A.dpsgd_event(1.0, 0.01, True)), None),
        "DP-SGD steps 1e3 (a float)": (later(lambda: A.dpsgd_event(1.0, 0.01, 1e3)),
                                       _finite_value),
        "DP-SGD steps 2^53 + 1": (later(lambda: A.dpsgd_event(1.0, 0.01, 2**53 + 1)), None),
        "Laplace x 1e9 (PLD)": (eps(de.LaplaceDpEvent(1.0), "pld", 10**9), None),
        "Laplace noise 1e-50 (PLD)": (eps(de.LaplaceDpEvent(1e-50), "pld"), None),
        "randomized response x 1e12 (PLD)": (
            lambda: A.PrivacyAccountant("pld").compose(
                de.RandomizedResponseDpEvent(0.5, 2), 10**12).get_epsilon(1e-5), None),
        "discrete Laplace 1e100 x 2^53 (PLD)": (
            eps(de.DiscreteLaplaceDpEvent(1e100, 2**53), "pld"), None),
        "discrete Gaussian sigma 1e-100 sensitivity 1e100": (
            later(lambda: A.DiscreteGaussianDpEvent(1e-100, 1e100)), None),
        "AMP sigma_out 1e-300": (later(lambda: A.AmpDpEvent(1, 1, 0.25, 1, 0.01, 1e-300)),
                                 None),
        "AMP x 1e6 (PLD)": (later(lambda: A.AmpDpEvent(1, 1, 0.25, 1, 0.01, 1), "pld", 10**6),
                            None),
        "tuned DP-SGD mean 1e300": (
            later(lambda: A.tuned_event(A.dpsgd_event(1.0, 0.01, 100), 1e300)), None),
        "count 10^300": (eps(de.GaussianDpEvent(1.0), "rdp", 10**300), None),
        "count 1.5": (eps(de.GaussianDpEvent(1.0), "rdp", 1.5), None),
        "grid step 1e-300": (eps(de.GaussianDpEvent(1.0), "pld",
                                 value_discretization_interval=1e-300), None),
        "grid step 1e300": (eps(de.GaussianDpEvent(1.0), value_discretization_interval=1e300),
                            None),
        "delta 1e-300 (auto)": (eps(de.GaussianDpEvent(1.0), delta=1e-300), _finite_value),
        "get_delta at epsilon 1e300": (
            lambda: A.PrivacyAccountant().compose(A.dpsgd_event(1, 0.01, 100)).get_delta(1e300),
            None),
        "objpert_delta at epsilon 1e300": (
            lambda: A.objpert_delta(1e300, sigma=1, lam=1, beta=0.25, lipschitz=1), None),
        "objpert_epsilon sigma 1e-300": (
            lambda: A.objpert_epsilon(1e-5, sigma=1e-300, lam=1, beta=0.25, lipschitz=1), None),
        "gaussian_epsilon sigma 1e-300": (lambda: A.gaussian_epsilon(1e-5, 1.0, 1e-300), None),
        "gaussian_lower_bound_epsilon x 2^53": (
            lambda: A.gaussian_lower_bound_epsilon(1e-5, sigma=1, lipschitz=1,
                                                   compositions=2**53), _finite_value),
        "calibrate DP-SGD 1e12 steps": (lambda: A.dpsgd_noise_multiplier(1, 1e-5, 0.01, 10**12),
                                        None),
        "calibrate DP-SGD sampling rate 1e-300": (
            lambda: A.dpsgd_noise_multiplier(1, 1e-5, 1e-300, 1000), None),
        "calibrate Gaussian x 2^53": (lambda: A.gaussian_noise_multiplier(1, 1e-5, 2**53), None),
        "calibrate AMP x 2^53": (lambda: A.amp_parameters(1, 1e-5, compositions=2**53), None),
        "calibrate AMP max_grid_steps 1e12": (
            lambda: A.amp_parameters(1, 1e-5, max_grid_steps=10**12), None),
        "calibrate AMP lam_growth nan": (lambda: A.amp_parameters(1, 1e-5, lam_growth=math.nan),
                                         None),
        "calibrate AMP PLD x 1e6": (
            lambda: A.amp_parameters(1, 1e-5, compositions=10**6, accounting="pld"), None),
    }  # fmt: skip
    return [Probe(AREA, f"API {k}", _api(b, c)) for k, (b, c) in cases.items()]


# -- the certified composition -------------------------------------------------------------


def _composition_check(sigma, count, h):
    """Review item 10: the certified k-fold Gaussian PLD never falls below the exact
    Gaussian of noise sigma / sqrt(k) (Balle & Wang 2018), and stays within 1 %."""

    def run(tmp):
        from dpconvex.accounting.gaussian import gaussian_delta, gaussian_epsilon
        from dpconvex.accounting.gaussian_pld import gaussian_pld

        composed = gaussian_pld(sigma, h, 1.0, count, slack=1e-17)
        exact_sigma = sigma / math.sqrt(count)
        for target in (1e-6, 1e-9, 1e-12):
            eps = gaussian_epsilon(target, 1.0, exact_sigma)
            exact = gaussian_delta(eps, 1.0, exact_sigma)
            got = composed.get_delta_for_epsilon(eps)
            if not exact <= got <= exact * 1.01:
                raise Violation(f"delta {got} against the exact {exact} at epsilon {eps}")

    return run


def _accountant_composition_check(tmp):
    """The accountant's DP-SGD PLD against its own certified composition with a tiny slack."""
    from dpconvex.accounting import PrivacyAccountant, dpsgd_event
    from dpconvex.accounting.gaussian_pld import gaussian_pld

    event = dpsgd_event(0.8, 0.1, 100)
    reference = gaussian_pld(0.8, 1e-3, 0.1, 100, slack=1e-16)
    acc = PrivacyAccountant(value_discretization_interval=1e-3).compose(event)
    for delta in (1e-5, 1e-9, 1e-12):
        ours, ref = acc.get_epsilon(delta), reference.get_epsilon_for_delta(delta)
        if not ours >= ref * (1 - 1e-6):
            raise Violation(f"epsilon {ours} below the certified {ref} at delta {delta}")


def probes() -> list[Probe]:
    from dpconvex.accounting import disk_cache

    record = disk_cache.RECORD_SIZE
    damages = {
        "entries signed with the user's key claim delta 0": lambda f, p: _sign(f, p.name, 0.0),
        "entries signed with the user's key claim delta 1": lambda f, p: _sign(f, p.name, 1.0),
        "entries signed claim NaN": lambda f, p: _sign(f, p.name, math.nan),
        "entries signed claim -1": lambda f, p: _sign(f, p.name, -1.0),
        "entries signed claim inf": lambda f, p: _sign(f, p.name, math.inf),
        "forged entries without the key (bad tag)": lambda f, p: p.write_bytes(
            b"DPCACC01" + struct.pack(">d", 0.0) + bytes(32)
        ),
        "truncated entries": lambda f, p: p.write_bytes(b"DPCACC01\x00\x00"),
        "entries of wrong type (text)": lambda f, p: p.write_text("0.0"),
        "entries of 8 GiB (sparse)": lambda f, p: _sparse(p, 2**33),
        "entries one byte too long": lambda f, p: p.write_bytes(b"\0" * (record + 1)),
        "entries that are FIFOs": lambda f, p: os.mkfifo(p),
        "entries that are directories": lambda f, p: p.mkdir(),
        "entries that are symlinks to /dev/zero": lambda f, p: p.symlink_to("/dev/zero"),
        "entries that are symlinks to signed entries": lambda f, p: (
            _sign(f.parent, "x" + p.name, 0.0),
            p.symlink_to(f.parent / ("x" + p.name)),
        ),
        "entries readable by others (0644)": lambda f, p: (
            _sign(f, p.name, 0.0),
            os.chmod(p, 0o666),
        ),
    }
    out = [
        Probe(AREA, f"cache: {name}", lambda tmp, d=damage: _after_damage(tmp, d))
        for name, damage in damages.items()
    ]
    for claim in (0.0, 1e-300, 1.0, 0.5e-5, 2e-5):
        out.append(Probe(AREA, f"cache: every possible entry claims {claim:g}", _claiming(claim)))
    for kind in ("symlink", "world-writable", "other owner", "a file", "unwritable parent"):
        out.append(Probe(AREA, f"cache: directory is {kind}", _unsafe_directory(kind)))
    for kind in ("group-readable", "symlink", "truncated", "huge", "replaced"):
        out.append(Probe(AREA, f"cache: key file {kind}", _key_file(kind)))
    out += [
        Probe(AREA, "cache: a DP-SGD fit on entries claiming delta 0", _forged_fit),
        Probe(AREA, "cache: a stored epsilon is never reported", _stored_epsilon_reported),
        Probe(AREA, "cache: a changed RDP rule is never served old answers", _changed_rule),
        Probe(AREA, "cache: AMP calibration on a cache claiming 0", _amp_forged),
        Probe(AREA, "cache: DPCONVEX_ACCOUNTING_CACHE=/dev/null", _environment_cache("/dev/null")),
        Probe(AREA, "cache: DPCONVEX_ACCOUNTING_CACHE=/proc/nope", _environment_cache("/proc/x")),
        Probe(AREA, "cache: DPCONVEX_ACCOUNTING_CACHE=TMP/new", _environment_cache("TMP/new")),
    ]
    out += _cli_probes()
    out += _api_probes()
    out += [
        Probe(AREA, "composition: 1000 Gaussians (h 1e-3) vs exact", _composition_check(10.0,
                                                                                      1000, 1e-3)),
        Probe(AREA, "composition: 30 Gaussians (h 1e-3) vs exact", _composition_check(3.0, 30,
                                                                                    1e-3)),
        Probe(AREA, "composition: 10^4 Gaussians (h 1e-4) vs exact", _composition_check(50.0,
                                                                                      10**4, 1e-4)),
        Probe(AREA, "composition: the accountant's DP-SGD PLD", _accountant_composition_check),
    ]  # fmt: skip
    return out
