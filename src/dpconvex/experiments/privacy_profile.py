"""Figure 1 of Redberg, Koskela & Wang (arXiv 2401.00583): four delta(epsilon) curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..accounting import conversions, objpert
from .figures import pyplot


def privacy_profile_curves(
    *, sigma: float, lam: float, beta: float, lipschitz: float, epsilons: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """delta(epsilon) of the four bounds compared in Redberg et al., Fig. 1.

    Keys: ``epsilon``; ``kifer`` (Thm 2.8, 1 where it certifies nothing);
    ``rdp`` (Thm 3.2 through the improved conversion, continuous alpha);
    ``profile`` (Thm 3.1); ``gaussian_lower_bound`` (Lemma 3.4).
    """
    kw = {"sigma": sigma, "lam": lam, "beta": beta, "lipschitz": lipschitz}
    if epsilons is None:
        eps_max = max(1.0, 1.5 * objpert.objpert_epsilon(1e-12, **kw))
        epsilons = np.linspace(0.0, eps_max, 121)
    epsilons = np.asarray(epsilons, dtype=float)
    return {
        "epsilon": epsilons,
        "kifer": np.asarray(objpert.kifer_delta(epsilons, **kw)),
        "rdp": np.asarray(
            conversions.delta_from_rdp_curve(lambda a: objpert.objpert_rdp(a, **kw), epsilons)
        ),
        "profile": np.asarray(objpert.objpert_delta(epsilons, **kw)),
        "gaussian_lower_bound": np.asarray(
            objpert.gaussian_lower_bound_delta(epsilons, sigma=sigma, lipschitz=lipschitz)
        ),
    }


_LABELS = {
    "kifer": "Kifer et al. (Thm 2.8)",
    "rdp": "RDP (Thm 3.2, improved conversion)",
    "profile": "Privacy profile (Thm 3.1)",
    "gaussian_lower_bound": "Gaussian lower bound (Lemma 3.4)",
}


def plot_privacy_profile(
    out: str | Path, *, sigma: float, lam: float, beta: float, lipschitz: float
) -> Path:
    """Write a Figure-1-style PNG of :func:`privacy_profile_curves` to ``out``."""
    plt = pyplot("dpconvex plot privacy-profile")

    curves = privacy_profile_curves(sigma=sigma, lam=lam, beta=beta, lipschitz=lipschitz)
    fig, ax = plt.subplots(figsize=(5.5, 4.0))
    for key, label in _LABELS.items():
        ax.semilogy(curves["epsilon"], np.maximum(curves[key], 1e-300), label=label)
    ax.set_xlabel(r"$\epsilon$")
    ax.set_ylabel(r"$\delta(\epsilon)$")
    ax.set_ylim(1e-16, 2.0)
    ax.set_title(rf"$\sigma={sigma:g},\ \beta={beta:g},\ \lambda={lam:g},\ L={lipschitz:g}$")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
