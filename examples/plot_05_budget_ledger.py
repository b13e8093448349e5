"""
A privacy budget ledger
=======================

Every analysis of the same data spends from one budget. :class:`dpconvex.Budget`
keeps the spends in a file (an SQLite ledger that several processes can share),
composes them with the accountant, and refuses a spend that would go over the budget
*before* the mechanism touches the data.
"""

# %%
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from dpconvex import Budget, BudgetExceededError, DPLogisticRegression
from dpconvex.accounting import GaussianDpEvent
from dpconvex.datasets import load_adult

X_train, X_test, y_train, y_test = load_adult().split(test_size=0.2, seed=0)
X_small, y_small = X_train[:3000], y_train[:3000]

ledger = Path(tempfile.mkdtemp()) / "adult-budget.sqlite"
budget = Budget(ledger, epsilon=1.2, delta=1e-5)

# %%
# Spend: model fits and other mechanisms
# --------------------------------------
# An estimator given ``budget=`` charges its planned event before fitting. Other
# mechanisms are charged with :meth:`~dpconvex.Budget.spend`. Each fit here asks
# for epsilon = 0.5; the fourth request does not fit in the remaining budget.
for i in range(8):
    try:
        model = DPLogisticRegression(epsilon=0.5, budget=budget, random_state=i)
        model.fit(X_small, y_small)
        print(f"fit {i}: accuracy {model.score(X_test, y_test):.4f}, "
              f"ledger total {budget.spent():.3f} of {budget.epsilon}")
    except BudgetExceededError as err:
        print(f"fit {i} refused: {err}")
        break

# %%
# A data-free spend, for example a Gaussian mechanism that released some statistic.
try:
    budget.spend(GaussianDpEvent(20.0), mechanism="a released statistic (Gaussian, z = 20)")
except BudgetExceededError as err:
    print(f"refused: {err}")

entries = budget.entries()
for e in entries:
    print(f"#{e.id} {e.mechanism:40s} epsilon after: {e.epsilon_after:.3f}")

# %%
# The ledger composes with the accountant: three fits at epsilon = 0.5 cost less than
# 3 x 0.5 = 1.5, and the small Gaussian release still fits after the refusal.
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.step(
    range(1, len(entries) + 1), [e.epsilon_after for e in entries], where="mid",
    marker="o", label="ledger total (accountant)",
)
fits = [e for e in entries if e.mechanism.startswith("DPLogisticRegression")]
ax.plot(
    range(1, len(fits) + 1), [0.5 * (i + 1) for i in range(len(fits))], ":",
    color="grey", label="sum of the fits' epsilons",
)
ax.axhline(budget.epsilon, color="red", ls="--", label="budget")
ax.set_xlabel("ledger entry")
ax.set_ylabel("epsilon spent")
ax.set_title("A privacy budget ledger")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
