"""
Accounting: composing mechanisms
================================

An accountant turns a description of what ran (a ``DpEvent``) into (epsilon, delta).
Running a mechanism several times on the same data composes: this example prices
``k`` runs of a Gaussian mechanism and of objective perturbation with the two
accountants, PLD (privacy-loss distributions, numerically tight) and RDP (Renyi
DP, a looser but faster bound), and compares both with naive addition of epsilons.
"""

# %%
import matplotlib.pyplot as plt

from dpconvex.accounting import GaussianDpEvent, ObjectivePerturbationDpEvent, PrivacyAccountant

delta = 1e-5
gaussian = GaussianDpEvent(4.0)  # noise multiplier 4 (standard deviation / sensitivity)
objpert = ObjectivePerturbationDpEvent(sigma=8.0, lam=10.0, beta=1.0, lipschitz=1.0)

counts = [1, 2, 4, 8, 16, 32]
curves = {}
for name, event in [("Gaussian, z = 4", gaussian), ("objective perturbation", objpert)]:
    for accounting in ("pld", "rdp"):
        eps = [
            PrivacyAccountant(accounting).compose(event, count=k).get_epsilon(delta)
            for k in counts
        ]
        curves[name, accounting] = eps
        print(f"{name:24s} {accounting}: " + "  ".join(f"{e:.3f}" for e in eps))

# %%
# Both accountants give valid upper bounds; PLD is the tighter one. Naive
# composition (k times the epsilon of one run) is valid too, but grows linearly,
# while the accountants grow roughly like the square root of k.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
for ax, name in zip(axes, ["Gaussian, z = 4", "objective perturbation"], strict=True):
    pld, rdp = curves[name, "pld"], curves[name, "rdp"]
    ax.plot(counts, pld, "o-", label="PLD accountant")
    ax.plot(counts, rdp, "s--", label="RDP accountant")
    ax.plot(counts, [k * pld[0] for k in counts], ":", color="grey", label="k x one run")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.5 * max(rdp))
    ax.set_title(name)
    ax.set_xlabel("number of runs k")
axes[0].set_ylabel(f"epsilon at delta = {delta:g}")
axes[0].legend()
fig.tight_layout()
plt.show()
