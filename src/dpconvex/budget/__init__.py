"""A privacy budget that survives: a ledger of spent events in SQLite, shared by processes.

``Budget(path, epsilon, delta)`` opens (or creates) a ledger. :meth:`Budget.spend`
validates the event, prices it together with every recorded event and, if the total
would exceed the budget, refuses before the mechanism runs. The decision is taken
inside the ledger's write transaction (``BEGIN IMMEDIATE``) on the entries as they
then stand.

What a ledger guarantees depends on its ``accounting``, fixed when it is created:

* **Composition** (``"auto"``, the default, ``"pld"``, ``"rdp"``): a spend is admitted
  while the privacy-loss-distribution (or best-order Renyi DP) composition of every
  recorded event and the new one is within (epsilon, delta). This is a valid bound
  when the list of events (their types and parameters) is fixed before the first one
  runs; each mechanism may still be chosen from earlier outputs as long as its event
  is the one planned (adaptive composition: Dong, Roth & Su 2022, arXiv 1905.02383,
  Thm 3.2; Mironov 2017, arXiv 1702.07476, Prop. 1). When the events themselves are
  chosen from earlier outputs and the running total decides when to stop, the ledger
  is a "natural filter", which is not a valid privacy filter in general (Regehr et al.
  2026, arXiv 2602.15815; Tran et al. 2026, arXiv 2602.06756; the setting is Rogers,
  Roth, Ullman & Vadhan 2016, arXiv 1605.08294); nor is a Renyi order chosen after
  the fact.
* **Renyi filter** (``"renyi-filter"``): one Renyi order alpha is fixed at creation,
  and a spend is admitted only if the recorded events' RDP at alpha plus its own stays
  at most ``B = epsilon - log(1 - 1/alpha) + (log delta + log alpha)/(alpha - 1)``.
  By Feldman & Zrnic 2021 ("Individual Privacy Accounting via a Renyi Filter", arXiv
  2008.11193, Thm 3.1) the whole interaction, however adaptively its events are
  chosen and whenever it stops, is (alpha, B)-RDP, and (alpha, B)-RDP is
  (epsilon, delta)-DP (Balle et al. 2020, arXiv 1905.09982, Thm 21; Canonne, Kamath
  & Steinke 2020, arXiv 2004.00010, Prop. 12). See :func:`renyi_filter_budget` and
  :func:`default_filter_order`.

How the ledger keeps its records:

* **A spend that returned is recorded.** Rollback-journal mode (``journal_mode=
  DELETE``, ``synchronous=FULL``): locks are POSIX locks on the database file itself,
  so every process that opens the file takes the same locks. A process killed
  mid-write leaves the ledger as it was before that write (SQLite's atomic commit);
  the next open rolls the unfinished write back, even one that only reads.
* **Short lock.** A spend prices the new total from a snapshot read outside the write
  lock, then takes the lock and checks that the chain's head is unchanged (else it
  prices again); only the check and the insert run with the lock held.
* **One file, one name.** The path is resolved through symlinks, and a ledger file
  with more than one hard link is refused (its journal would be looked up under a
  different name by each alias).
* **Fork-safe.** No connection outlives a call, and ``os.register_at_fork`` makes a
  fork wait until no thread of this process is inside a ledger call.
* **No refunds.** Every event is validated (positive integer counts, finite positive
  noise, sampling rates in (0, 1], an event type the ledger can load back) before it
  is priced; labels and mechanism names with control characters are refused.
* **Tamper evidence.** Each entry carries a SHA-256 hash chained to the previous
  entry and to the budget itself (with its accounting and filter order); the chain's
  head (entry count and last hash) is kept with the budget. Editing, deleting or
  inserting an entry, or editing the budget, is found on open and makes
  :meth:`Budget.spend` refuse until the owner calls :meth:`Budget.acknowledge_tampering`
  (``dpconvex budget acknowledge``). The chain has no secret key: it catches careless
  edits and lost rows, not an adversary who can rewrite the file and recompute it.
* **Copies are not detectable in general.** A copy of the ledger, or an older copy
  restored over it, is a whole valid ledger: spends recorded in one copy do not count
  in the other, and a restored copy gives back what was spent since it was taken.
  The ledger records a random id and the file's inode at creation and warns
  (:class:`LedgerFileWarning`) when it is opened as a different file (``cp``, a
  restore by ``mv`` or ``rsync``); a rename keeps the inode and is not reported, and
  a restore that overwrites the file in place (``cp old ledger``) keeps it too.

Charges are final: a mechanism that fails after its spend keeps its charge (its
failure may itself depend on the data).
"""

from __future__ import annotations

# ``X as X``: the ledger's limits and format stay importable from here (not in __all__)
from .chain import FORMAT as FORMAT
from .ledger import Budget
from .renyi_filter import default_filter_order, event_rdp, renyi_filter_budget
from .reports import summary_text
from .values import (
    ACCOUNTINGS,
    MIN_DELTA,
    RENYI_FILTER,
    BudgetExceededError,
    Entry,
    LedgerError,
    LedgerFileWarning,
    LedgerTamperedError,
    safe_text,
    safe_time,
)
from .values import MAX_CLOCK as MAX_CLOCK
from .values import MAX_EVENT_TEXT as MAX_EVENT_TEXT
from .values import MAX_FILTER_ORDER as MAX_FILTER_ORDER
from .values import MAX_NAME as MAX_NAME

__all__ = [
    "ACCOUNTINGS",
    "MIN_DELTA",
    "RENYI_FILTER",
    "Budget",
    "BudgetExceededError",
    "Entry",
    "LedgerError",
    "LedgerFileWarning",
    "LedgerTamperedError",
    "default_filter_order",
    "event_rdp",
    "renyi_filter_budget",
    "safe_text",
    "safe_time",
    "summary_text",
]
