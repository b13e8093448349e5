"""The privacy budget ledger: :class:`Budget` prices every spend against what is recorded.

See :mod:`dpconvex.budget` for what a ledger guarantees and how it keeps its records.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

from dp_accounting.dp_event import ComposedDpEvent, DpEvent, SelfComposedDpEvent

from .. import _validation as v
from ..accounting import PrivacyAccountant, UnsupportedEventError, check_epsilon
from ..accounting.event_checks import validate_event
from ..accounting.serialization import event_to_dict
from .chain import _RDP, FORMAT, _entry_hash, _load_event, _State
from .ledger_file import LedgerFile, _crash_point
from .renyi_filter import _check_order, _conversion_offset, event_rdp, renyi_filter_budget
from .reports import entry_summary
from .values import (
    ACCOUNTINGS,
    MAX_NAME,
    RENYI_FILTER,
    BudgetExceededError,
    Entry,
    LedgerError,
    LedgerFileWarning,
    LedgerTamperedError,
    _budget_number,
    _check_delta,
    _check_name,
    _clock,
    _finite_or_none,
    safe_text,
    safe_time,
)

# A spend prices from a snapshot outside the write lock this many times before it
# prices with the lock held (which always makes progress).
_OPTIMISTIC_TRIES = 3


@dataclass(frozen=True)
class _Price:
    admitted: bool
    epsilon_after: float
    rdp_after: float | None


class Budget(LedgerFile):
    """A persistent (epsilon, delta) budget shared by every process that opens ``path``.

    Creating: pass ``epsilon`` (in [1e-4, 100]) and ``delta`` (in [1e-100, 1)), and
    optionally ``accounting``: ``"auto"`` (default: PLD where every event supports it,
    else RDP), ``"pld"``, ``"rdp"`` — composition, valid for a list of events fixed in
    advance — or ``"renyi-filter"``, a proven privacy filter at Renyi order ``order``
    (default :func:`default_filter_order`), valid however adaptively the events are
    chosen. Reopening: omit them, or pass the values the ledger has (a different
    budget, accounting or order is refused).

    Reading (:meth:`entries`, :meth:`spent`, :meth:`summary`) opens the file read-only;
    only spending and acknowledging write. ``tampering`` is ``None`` for an intact
    ledger, else what was found when it was opened; ``file_warning`` is ``None`` unless
    the file is not the one the ledger was created as (then a
    :class:`LedgerFileWarning` was issued too).
    """

    def __init__(
        self,
        path: str | Path,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        accounting: str | None = None,
        order: float | None = None,
        timeout: float = 60.0,
    ):
        self.path = Path(path).expanduser().resolve()
        self._timeout = v.positive("timeout", timeout)
        epsilon = None if epsilon is None else check_epsilon(_budget_number("epsilon", epsilon))
        delta = None if delta is None else _check_delta(delta)
        if accounting is not None and accounting not in ACCOUNTINGS:
            raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
        order = None if order is None else _check_order(order)
        if order is not None and accounting not in (None, RENYI_FILTER):
            raise ValueError(f"order is for accounting={RENYI_FILTER!r}, not {accounting!r}")
        if self.path.is_dir():
            raise LedgerError(f"{self.path} is a directory, not a ledger file")
        stored = self._read_budget() if self.path.exists() else None
        if stored is None:
            if epsilon is None or delta is None:
                raise ValueError(f"{self.path} holds no budget yet: give epsilon and delta")
            accounting = accounting or ("renyi-filter" if order is not None else "auto")
            stored = self._create(epsilon, delta, accounting, order)
        elif stored["format"] != FORMAT:
            stored = self._upgrade()
        self._adopt(stored)
        for name, given in (("epsilon", epsilon), ("delta", delta), ("accounting", accounting),
                            ("order", order)):  # fmt: skip
            if given is not None and given != getattr(self, name):
                raise ValueError(f"{self.path} has {name}={getattr(self, name)!r}, not {given!r}")
        self.tampering = self.check()
        self.file_warning = self._file_identity_change(stored)
        if self.file_warning:
            warnings.warn(self.file_warning, LedgerFileWarning, stacklevel=2)

    def _adopt(self, stored: dict) -> None:
        """Take the stored budget, after checking it is one this code can price."""
        try:
            self.epsilon = v.positive("epsilon", _budget_number("epsilon", stored["epsilon"]))
            self.delta = _check_delta(stored["delta"])
            if stored["accounting"] not in ACCOUNTINGS:
                raise ValueError(f"accounting {safe_text(stored['accounting'], 40)} is unknown")
            self.accounting = stored["accounting"]
            self.order = None
            if self.accounting == RENYI_FILTER:
                self.order = _check_order(stored["rdp_order"])
                if renyi_filter_budget(self.epsilon, self.delta, self.order) <= 0:
                    raise ValueError(f"order {self.order:g} leaves no Renyi budget")
        except ValueError as err:
            raise LedgerError(f"{self.path} holds a budget that cannot be used: {err}") from None
        self.ledger_id = stored.get("ledger_id")

    @property
    def rdp_budget(self) -> float | None:
        """The filter's Renyi budget B at :attr:`order` (None for a composition ledger)."""
        if self.order is None:
            return None
        return renyi_filter_budget(self.epsilon, self.delta, self.order)

    # --- pricing ------------------------------------------------------------------
    def _epsilon_of(self, texts: list[str]) -> float:
        """Epsilon of all stored events composed; repeats of one event are self-composed.

        Composition is commutative, so grouping identical events (same stored JSON)
        into ``SelfComposedDpEvent(event, count)`` prices the same mechanism; the
        accountant then composes each group by one FFT power instead of one
        convolution per spend.
        """
        if not texts:
            return 0.0
        groups: dict[str, int] = {}
        for text in texts:
            groups[text] = groups.get(text, 0) + 1
        parts = []
        for text, count in groups.items():
            event = _load_event(text)
            parts.append(event if count == 1 else SelfComposedDpEvent(event, count))
        accountant = PrivacyAccountant(self.accounting)
        return float(accountant.compose(ComposedDpEvent(parts)).get_epsilon(self.delta))

    def _rdp_of(self, text: str) -> float:
        return _RDP.get((text, self.order), lambda: event_rdp(_load_event(text), self.order))

    def _rdp_sum(self, texts: list[str]) -> float:
        return math.fsum(self._rdp_of(t) for t in texts)

    def _filter_epsilon(self, rdp_sum: float) -> float:
        """Epsilon of the recorded events at the filter's order (0 if nothing is recorded)."""
        if rdp_sum <= 0:
            return 0.0
        return min(self.epsilon, rdp_sum + _conversion_offset(self.delta, self.order))

    def _price(self, rows: list, payload: str) -> _Price:
        """Whether the event ``payload`` fits after the recorded ``rows``, and the new totals."""
        texts = [row[4] for row in rows]
        try:
            if self.accounting != RENYI_FILTER:
                after = self._epsilon_of([*texts, payload])
                return _Price(after <= self.epsilon, after, None)
            rdp_after = self._rdp_sum(texts) + self._rdp_of(payload)
        except (ValueError, UnsupportedEventError) as err:
            raise LedgerError(f"{self.path} holds an entry that cannot be priced: {err}") from None
        admitted = rdp_after <= self.rdp_budget
        return _Price(admitted, self._filter_epsilon(rdp_after), rdp_after)

    def _snapshot(self) -> _State:
        with self._db(write=False) as db:
            db.execute("BEGIN")
            state = self._state(db)
            db.execute("COMMIT")
        return state

    def spend(self, event: DpEvent, *, mechanism: str, label: str = "") -> Entry:
        """Record ``event`` if the total stays within budget; else raise and record nothing.

        Raises ``ValueError``/``TypeError`` for an invalid event, label or mechanism name,
        :class:`BudgetExceededError` when the budget would be exceeded, and
        :class:`LedgerTamperedError` when the chain is broken and not acknowledged.
        """
        event = validate_event(event, storable=True)
        payload = json.dumps(event_to_dict(event))
        mechanism, label = _check_name("mechanism", mechanism), _check_name("label", label)
        if self.accounting == RENYI_FILTER:
            self._rdp_of(payload)  # an event RDP cannot price is refused before any lock
        _clock()
        for attempt in range(_OPTIMISTIC_TRIES + 1):
            locked = attempt == _OPTIMISTIC_TRIES
            snapshot = price = None
            if not locked:
                snapshot = self._snapshot()
                self._refuse_if_tampered(snapshot.finding)
                price = self._price(snapshot.rows, payload)
            entry = self._commit(event, payload, mechanism, label, snapshot, price)
            if entry is not None:
                return entry
        raise AssertionError("unreachable: the last attempt prices with the lock held")

    def _refuse_if_tampered(self, finding: str | None) -> None:
        if finding is not None:
            self.tampering = finding
            raise LedgerTamperedError(
                f"{self.path} was altered: {safe_text(finding)}. Nothing was spent. Check the "
                f"ledger, then accept it with `dpconvex budget acknowledge {self.path}`."
            )

    def _commit(self, event, payload, mechanism, label, snapshot, price) -> Entry | None:
        """Inside the write lock: check, then insert or refuse. None: the snapshot was stale."""
        with self._db(write=True) as db:
            db.execute("BEGIN IMMEDIATE")  # the write lock: spends are serialized
            state = self._state(db)
            if state.finding is not None:
                db.execute("ROLLBACK")
                self._refuse_if_tampered(state.finding)
            if not self._same_budget(state.budget):
                db.execute("ROLLBACK")
                raise LedgerError(
                    f"the budget of {self.path} was changed (and acknowledged) since it was "
                    "opened here; nothing was spent. Open the ledger again."
                )
            if snapshot is not None and (state.head, state.rows) != (snapshot.head, snapshot.rows):
                db.execute("ROLLBACK")
                return None  # another process spent meanwhile: price again
            if price is None:
                price = self._price(state.rows, payload)
            if not price.admitted:
                db.execute("ROLLBACK")
                raise BudgetExceededError(self._exceeded_message(mechanism, price))
            _crash_point()
            now = _clock()
            self._add_columns(db)
            self._record_identity(db)
            cursor = db.execute(
                "INSERT INTO entries (time, mechanism, label, event, epsilon_after, rdp_after) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (now, mechanism, label, payload, price.epsilon_after, price.rdp_after),
            )
            entry_id = int(cursor.lastrowid)
            row = (entry_id, now, mechanism, label, payload, price.epsilon_after, None,
                   price.rdp_after)  # fmt: skip
            digest = _entry_hash(state.head[1], row, self.accounting == RENYI_FILTER)
            db.execute("UPDATE entries SET hash = ? WHERE id = ?", (digest, entry_id))
            db.execute(
                "UPDATE budget SET head_count = ?, head_hash = ?", (len(state.rows) + 1, digest)
            )
            db.execute("COMMIT")
        return Entry(entry_id, now, mechanism, label, event, price.epsilon_after, price.rdp_after)

    def _same_budget(self, budget: tuple) -> bool:
        """Whether the file's budget row still says what this object prices against."""
        epsilon, delta, accounting, _, order = budget
        return (epsilon, delta, accounting) == (self.epsilon, self.delta, self.accounting) and (
            self.order is None or order == self.order
        )

    def _exceeded_message(self, mechanism: str, price: _Price) -> str:
        if price.rdp_after is None:
            return (
                f"spending {mechanism} would bring epsilon to {price.epsilon_after:.6g} > budget "
                f"{self.epsilon:g} (delta {self.delta:g}); nothing was recorded"
            )
        return (
            f"spending {mechanism} would bring the Renyi divergence at order {self.order:g} to "
            f"{price.rdp_after:.6g} > {self.rdp_budget:.6g}, the filter's budget for "
            f"epsilon={self.epsilon:g}, delta={self.delta:g}; nothing was recorded"
        )

    # --- reading -------------------------------------------------------------------
    def _rows(self) -> list:
        with self._db(write=False) as db:
            return self._state(db).rows

    def entries(self) -> list[Entry]:
        """Every recorded spend, oldest first; LedgerError if one cannot be read."""
        return [self._entry(row) for row in self._rows()]

    def _entry(self, row: tuple) -> Entry:
        entry_id, when, mechanism, label, text, epsilon_after, _, rdp_after = row
        try:
            event = _load_event(text)
            if not all(isinstance(x, str) for x in (mechanism, label)):
                raise ValueError("its mechanism or label is not text")
            if any(_finite_or_none(x) is None for x in (when, epsilon_after)):
                raise ValueError("its time or epsilon is not a finite number")
        except ValueError as err:
            raise LedgerError(f"{self.path}: entry #{entry_id} cannot be read: {err}") from None
        # spends refuse control characters; a label that has them came from an edited or
        # older file, and is given escaped, so that printing an entry is always safe
        mechanism, label = safe_text(mechanism, MAX_NAME), safe_text(label, MAX_NAME)
        return Entry(entry_id, float(when), mechanism, label, event, float(epsilon_after),
                     _finite_or_none(rdp_after))  # fmt: skip

    def rdp_spent(self) -> float:
        """The filter's Renyi sum at :attr:`order` of everything recorded (filter ledgers)."""
        if self.order is None:
            raise ValueError(f"{self.path} is a composition ledger, not a Renyi filter")
        try:
            return self._rdp_sum([row[4] for row in self._rows()])
        except (ValueError, UnsupportedEventError) as err:
            raise LedgerError(f"{self.path} holds an entry that cannot be priced: {err}") from None

    def spent(self) -> float:
        """Epsilon (at the budget's delta) of everything recorded, composed.

        For a Renyi filter: the conversion of :meth:`rdp_spent` at the filter's order
        (it reaches the budget's epsilon exactly when the Renyi sum reaches
        :attr:`rdp_budget`). Either way this number is valid for the recorded events
        as a list fixed in advance; what a filter guarantees under adaptive choice is
        the budget itself, (epsilon, delta), for the whole interaction.
        """
        if self.order is not None:
            return self._filter_epsilon(self.rdp_spent())
        try:
            return self._epsilon_of([row[4] for row in self._rows()])
        except (ValueError, UnsupportedEventError) as err:
            raise LedgerError(f"{self.path} holds an entry that cannot be priced: {err}") from None

    def remaining(self) -> float:
        return max(0.0, self.epsilon - self.spent())

    def guarantee(self) -> str:
        """One sentence: what the ledger's refusals guarantee."""
        if self.order is None:
            return (
                f"({self.epsilon:g}, {self.delta:g})-DP for spends whose events were fixed "
                "before the first one ran; not proven when events are chosen from earlier "
                "results (use a renyi-filter ledger for that)"
            )
        return (
            f"({self.epsilon:g}, {self.delta:g})-DP for everything spent through this ledger, "
            "however each spend was chosen from earlier results (Renyi filter at order "
            f"{self.order:g})"
        )

    def summary(self) -> dict:
        """What ``dpconvex budget show`` prints, JSON-ready and safe to print on a terminal.

        Strings read from the file are escaped (:func:`safe_text`), times are given
        both as numbers (None when not finite) and as text (:func:`safe_time`).
        """
        entries = self.entries()
        spent = self.spent()
        out = {
            "ledger_id": safe_text(self.ledger_id) if self.ledger_id is not None else None,
            "accounting": self.accounting,
            "guarantee": self.guarantee(),
            "tampering": None if self.tampering is None else safe_text(self.tampering, 400),
            "file_warning": None
            if self.file_warning is None
            else safe_text(self.file_warning, 600),
            "acknowledged": [
                {"time": _finite_or_none(t), "time_utc": safe_time(t), "finding": safe_text(f, 400)}
                for t, f in self.acknowledgments()
            ],
            "epsilon_budget": self.epsilon,
            "delta": self.delta,
            "epsilon_spent": spent,
            "epsilon_left": max(0.0, self.epsilon - spent),
        }
        if self.order is not None:
            rdp = self.rdp_spent()
            out.update(rdp_order=self.order, rdp_budget=self.rdp_budget, rdp_spent=rdp,
                       rdp_left=max(0.0, self.rdp_budget - rdp))  # fmt: skip
        out["entries"] = [entry_summary(e) for e in entries]
        return out
