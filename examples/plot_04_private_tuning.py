"""
What hyperparameter tuning costs
================================

Trying several hyperparameters on private data and keeping the best model leaks
information through the choice. :class:`dpconvex.PrivateRandomSearch` prices it with
the Papernot-Steinke result ("Hyperparameter Tuning with Renyi Differential Privacy",
arXiv 2110.03620): run the training a *random* number of times K (Poisson with mean
``mu``) and release only the best run. This example shows the price, with the
accounting functions the search itself uses.
"""

# %%
# The cost of repeat-and-select
# -----------------------------
# One DP-SGD training run on Adult-sized data (36,000 rows, expected batch 256,
# 10 passes), priced alone and inside a tuning procedure with mean ``mu`` runs.
import matplotlib.pyplot as plt

from dpconvex.accounting import PrivacyAccountant, dpsgd_event, tuned_event

delta = 1e-5
run = dpsgd_event(noise_multiplier=1.0, sampling_rate=256 / 36000, steps=1400)
single = PrivacyAccountant().compose(run).get_epsilon(delta)
print(f"one run: epsilon = {single:.3f}")

mus = [1, 2, 5, 10, 20, 50]
tuned = [PrivacyAccountant().compose(tuned_event(run, mu)).get_epsilon(delta) for mu in mus]
for mu, eps in zip(mus, tuned, strict=True):
    print(f"mu = {mu:3d}: epsilon = {eps:.3f}  ({eps / single:.2f} x one run)")

# %%
# The price grows much more slowly than the number of runs: naive composition of
# ``mu`` separate trainings would cost about ``mu`` times one run.
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogx(mus, tuned, "o-", label="repeat-and-select, K ~ Poisson(mu)")
ax.axhline(single, color="grey", ls="--", label="one run, no tuning")
ax.set_xlabel("mean number of runs mu")
ax.set_ylabel(f"epsilon at delta = {delta:g}")
ax.set_title("DP-SGD with private hyperparameter tuning")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# Running a search
# ----------------
# :class:`~dpconvex.PrivateRandomSearch` does the calibration in the other
# direction: given the total budget it finds the per-run epsilon, so
# ``search.epsilon_`` includes the tuning. Settings that do not change the privacy
# cost (``learning_rate``, ``optimizer``, ``solver``, ``max_iter``) may come from any
# distribution; privacy-relevant ones must be finite lists. (Not run here: a search
# trains ``mu`` models on average.)
#
# .. code-block:: python
#
#     from scipy.stats import loguniform
#     from dpconvex import DPLogisticRegression, PrivateRandomSearch
#
#     search = PrivateRandomSearch(
#         DPLogisticRegression(method="dpsgd"),
#         {"learning_rate": loguniform(1e-4, 1e-1)},
#         epsilon=1.0, delta=1e-5,
#     ).fit(X_train, y_train)
#     print(search.best_params_, search.score(X_test, y_test), search.epsilon_)

# %%
# Tuning on a subsample
# ---------------------
# By default the search runs on a secret Poisson subsample of the rows (each row in
# with probability q) and trains the final model once on all rows (Koskela & Kulkarni,
# NeurIPS 2023). The whole search is then an event run on a Poisson subsample, which
# amplifies its privacy (Zhu & Wang 2019, Thm 6), composed with the final run. The same
# per-run budget costs much less than repeat-and-select on all rows, and at small q
# hardly more than the final run alone.
from dp_accounting.dp_event import ComposedDpEvent, PoissonSampledDpEvent  # noqa: E402

search = tuned_event(run, 3.0, 1.0)  # geometric K of mean 3, the default
qs = [0.02, 0.05, 0.1, 0.2, 0.5]
subsampled = [
    PrivacyAccountant().compose(ComposedDpEvent([PoissonSampledDpEvent(q, search), run]))
    .get_epsilon(delta)
    for q in qs
]  # fmt: skip
repeat = PrivacyAccountant().compose(search).get_epsilon(delta)
for q, eps in zip(qs, subsampled, strict=True):
    print(f"q = {q:4.2f}: epsilon = {eps:.3f}  (repeat-and-select on all rows: {repeat:.3f})")
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogx(qs, subsampled, "o-", label="search on a q-subsample + final run on all rows")
ax.axhline(repeat, color="C1", ls=":", label="repeat-and-select on all rows (mean 3)")
ax.axhline(single, color="grey", ls="--", label="one run, no tuning")
ax.set_xlabel("subsample rate q")
ax.set_ylabel(f"epsilon at delta = {delta:g}")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
