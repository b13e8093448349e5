"""Figures 1, 3, 4 and 5 of Redberg, Koskela & Wang (arXiv 2401.00583): privacy curves.

No data.

Each function writes CSV files of the numbers, a JSON summary and a PNG into
``out`` and returns the summary. Parameters that the paper does not state are
chosen by us and recorded in the JSON ("assumed").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..accounting import (
    ObjectivePerturbationDpEvent,
    PrivacyAccountant,
    RdpAccountant,
    dpsgd_event,
    gaussian_rdp,
    jacobian_term,
    objpert_epsilon,
    objpert_rdp,
)
from ..accounting.conversions import epsilon_from_rdp_curve
from .figures import pyplot
from .privacy_profile import privacy_profile_curves


def _write_csv(path: Path, columns: dict[str, np.ndarray]) -> None:
    names = list(columns)
    data = np.column_stack([np.asarray(columns[n], dtype=float) for n in names])
    np.savetxt(path, data, delimiter=",", header=",".join(names), comments="", fmt="%.10g")


def _finish(out: Path, name: str, fig, summary: dict) -> dict:
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=120)
    pyplot().close(fig)
    (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
    return summary


FIG1_PANELS = {"left": (5.0, 1.0, 20.0), "right": (10.0, 1.0, 5.0)}


def fig1(out: Path, quick: bool = False) -> dict:
    """delta(epsilon) of Kifer (Thm 2.8), RDP (Thm 3.2), Thm 3.1 and the Gaussian lower bound."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    summary = {
        "figure": "Redberg, Koskela & Wang (arXiv 2401.00583) Fig. 1",
        "assumed": {"L": 1.0},
        "panels": {},
    }
    for ax, (panel, (sigma, beta, lam)) in zip(axes, FIG1_PANELS.items(), strict=True):
        kw = {"sigma": sigma, "lam": lam, "beta": beta, "lipschitz": 1.0}
        eps_max = 2.0 if panel == "left" else 1.2
        curves = privacy_profile_curves(
            **kw, epsilons=np.linspace(0.0, eps_max, 41 if quick else 201)
        )
        _write_csv(out / f"fig1_{panel}.csv", curves)
        for key, label in [
            ("kifer", "Kifer et al. (Thm 2.8)"),
            ("rdp", "RDP (Thm 3.2)"),
            ("profile", "Thm 3.1 (hockey-stick)"),
            ("gaussian_lower_bound", "Gaussian lower bound"),
        ]:
            ax.semilogy(curves["epsilon"], np.maximum(curves[key], 1e-300), label=label)
        ax.set_ylim(1e-12, 2)
        ax.set_xlabel(r"$\epsilon$")
        ax.set_ylabel(r"$\delta(\epsilon)$")
        ax.set_title(rf"$\sigma={sigma:g}, \beta={beta:g}, \lambda={lam:g}$")
        ax.legend(fontsize=7)
        summary["panels"][panel] = {
            "sigma": sigma,
            "beta": beta,
            "lam": lam,
            "epsilon_at_1e-5": {
                "thm_3_1": objpert_epsilon(1e-5, **kw),
                "rdp_improved": epsilon_from_rdp_curve(lambda a, kw=kw: objpert_rdp(a, **kw), 1e-5),
            },
        }
    return _finish(out, "fig1", fig, summary)


FIG3_PANELS = [(100.0, 10.0), (10.0, 1.0), (10.0, 10.0), (1.0, 1.0)]
FIG3_BETA = 0.5


def fig3(out: Path, quick: bool = False) -> dict:
    """RDP curves: normal (Gaussian), half-normal (Thm 3.2 minus c) and objective perturbation."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(9, 7))
    alphas = np.geomspace(1.01, 1000.0, 60 if quick else 300)
    summary = {
        "figure": "Redberg, Koskela & Wang (arXiv 2401.00583) Fig. 3",
        "assumed": {"beta": FIG3_BETA, "L": 1.0},
        "panels": [],
    }
    for ax, (sigma, lam) in zip(axes.ravel(), FIG3_PANELS, strict=True):
        kw = {"sigma": sigma, "lam": lam, "beta": FIG3_BETA, "lipschitz": 1.0}
        normal = gaussian_rdp(alphas, 1.0, sigma)
        objpert = objpert_rdp(alphas, **kw)
        half_normal = objpert - jacobian_term(lam, FIG3_BETA)
        _write_csv(
            out / f"fig3_sigma{sigma:g}_lam{lam:g}.csv",
            {"alpha": alphas, "normal": normal, "half_normal": half_normal, "objpert": objpert},
        )
        ax.loglog(alphas, normal, label="normal")
        ax.loglog(alphas, half_normal, label="half-normal")
        ax.loglog(alphas, objpert, label="ObjPert (Thm 3.2)")
        ax.set_title(rf"$\sigma={sigma:g}, \lambda={lam:g}$")
        ax.set_xlabel(r"$\alpha$")
        ax.set_ylabel(r"$\epsilon(\alpha)$")
        ax.legend(fontsize=7)
        summary["panels"].append(
            {
                "sigma": sigma,
                "lam": lam,
                "jacobian_term": jacobian_term(lam, FIG3_BETA),
                "objpert_over_normal_at_alpha_1000": float(objpert[-1] / normal[-1]),
            }
        )
    return _finish(out, "fig3", fig, summary)


FIG4 = {"sigma": 8.0, "beta": 1.0, "lam": 10.0}


def fig4(out: Path, quick: bool = False) -> dict:
    """Epsilon at delta = 1e-5 after k compositions: RDP (both conversions) vs PLD (eq. D.11)."""
    plt = pyplot()
    ks = (
        [1, 2, 5, 10, 20, 50, 100]
        if quick
        else sorted({int(k) for k in np.round(np.geomspace(1, 1000, 25))})
    )
    event = ObjectivePerturbationDpEvent(FIG4["sigma"], FIG4["lam"], FIG4["beta"], 1.0)
    rows = {"k": [], "pld": [], "rdp_improved": [], "rdp_standard": []}
    for k in ks:
        rows["k"].append(k)
        rows["pld"].append(PrivacyAccountant("pld").compose(event, k).get_epsilon(1e-5))
        rows["rdp_improved"].append(PrivacyAccountant("rdp").compose(event, k).get_epsilon(1e-5))
        rows["rdp_standard"].append(
            PrivacyAccountant("rdp", conversion="standard").compose(event, k).get_epsilon(1e-5)
        )
    _write_csv(out / "fig4.csv", rows)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.loglog(rows["k"], rows["rdp_standard"], "o-", label="RDP, standard conversion")
    ax.loglog(rows["k"], rows["rdp_improved"], "o-", label="RDP, improved conversion")
    ax.loglog(rows["k"], rows["pld"], "o-", label="PLD (D.11)")
    ax.set_xlabel("compositions k")
    ax.set_ylabel(r"$\epsilon$ at $\delta=10^{-5}$")
    ax.set_title(r"$\sigma=8, \beta=1, \lambda=10, L=1$")
    ax.legend(fontsize=8)
    summary = {
        "figure": "Redberg, Koskela & Wang (arXiv 2401.00583) Fig. 4",
        "assumed": {"L": 1.0},
        "delta": 1e-5,
        **{key: list(map(float, val)) for key, val in rows.items()},
    }
    return _finish(out, "fig4", fig, summary)


FIG5_PANELS = [
    {"sigma": 100.0, "q": 0.1, "sigma_dpsgd": 10.0, "steps": 100},
    {"sigma": 40.0, "q": 0.5, "sigma_dpsgd": 20.0, "steps": 4},
]
FIG5_OBJPERT = {"beta": 1.0, "lam": 10.0, "lipschitz": 1.0}  # not stated in the paper


def fig5(out: Path, quick: bool = False) -> dict:
    """RDP curves of objective perturbation, the Gaussian mechanism and DP-SGD (App. I)."""
    plt = pyplot()
    orders = np.unique(
        np.concatenate(
            [
                1.0 + np.geomspace(0.05, 1.0, 8),
                np.arange(2, 201 if quick else 1001),
            ]
        )
    )
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    summary = {
        "figure": "Redberg, Koskela & Wang (arXiv 2401.00583) Fig. 5",
        "assumed": {**FIG5_OBJPERT, "dpsgd_steps": "1/q^2 (100 and 4)"},
        "panels": [],
    }
    for ax, panel in zip(axes, FIG5_PANELS, strict=True):
        objpert = objpert_rdp(orders, sigma=panel["sigma"], **FIG5_OBJPERT)
        gauss = gaussian_rdp(orders, 1.0, panel["sigma"])
        # dp_accounting's subsampled-Gaussian RDP is exact at integer orders only (at
        # fractional orders it is a looser, non-monotone bound): plot DP-SGD at alpha >= 2
        integer = orders >= 2
        sgd = np.full(orders.shape, np.nan)
        sgd[integer] = (
            RdpAccountant(orders[integer])
            .compose(dpsgd_event(panel["sigma_dpsgd"], panel["q"], panel["steps"]))
            .rdp
        )
        _write_csv(
            out / f"fig5_sigma{panel['sigma']:g}.csv",
            {"alpha": orders, "objpert": objpert, "gaussian": gauss, "dpsgd": sgd},
        )
        ax.loglog(orders, objpert, label="ObjPert")
        ax.loglog(orders, gauss, label="GM")
        ax.loglog(orders[integer], sgd[integer], label="DP-SGD")
        ax.set_xlabel(r"$\alpha$")
        ax.set_ylabel(r"$\epsilon(\alpha)$")
        ax.set_title(
            rf"$\sigma={panel['sigma']:g}$; DP-SGD $p={panel['q']}$, "
            rf"$\sigma={panel['sigma_dpsgd']:g}$"
        )
        ax.legend(fontsize=8)
        above = integer & (np.nan_to_num(sgd) > objpert)
        crossing = orders[np.argmax(above)] if np.any(above) else None
        summary["panels"].append(
            {
                **panel,
                "dpsgd_exceeds_objpert_from_alpha": None if crossing is None else float(crossing),
            }
        )
    return _finish(out, "fig5", fig, summary)
