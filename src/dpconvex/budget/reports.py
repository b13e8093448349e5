"""What ``dpconvex budget show`` prints: a ledger's summary as JSON-ready values and text."""

from __future__ import annotations

from ..accounting.serialization import event_to_dict
from .values import Entry, _finite_or_none, safe_text, safe_time


def entry_summary(entry: Entry) -> dict:
    return {
        "id": entry.id,
        "time": _finite_or_none(entry.time),
        "time_utc": safe_time(entry.time),
        "mechanism": safe_text(entry.mechanism),
        "label": safe_text(entry.label),
        "epsilon_after": _finite_or_none(entry.epsilon_after),
        "rdp_after": _finite_or_none(entry.rdp_after),
        "event": event_to_dict(entry.event),
    }


def summary_text(summary: dict) -> str:
    """The lines ``dpconvex budget show`` prints for :meth:`Budget.summary` (already safe)."""
    lines = [
        f"budget epsilon={summary['epsilon_budget']:g} at delta={summary['delta']:g} "
        f"({summary['accounting']} accounting)",
        f"guarantee: {summary['guarantee']}",
        f"spent  epsilon={summary['epsilon_spent']:.8g}   left {summary['epsilon_left']:.8g}",
    ]
    if "rdp_order" in summary:
        lines.append(
            f"Renyi filter at order {summary['rdp_order']:g}: spent {summary['rdp_spent']:.8g} "
            f"of {summary['rdp_budget']:.8g}, left {summary['rdp_left']:.8g}"
        )
    for e in summary["entries"]:
        total = "?" if e["epsilon_after"] is None else f"{e['epsilon_after']:.6g}"
        lines.append(f"  #{e['id']} {e['time_utc']}  {e['mechanism']}  {e['label']}  "
                     f"(total after: {total})")  # fmt: skip
    for ack in summary["acknowledged"]:
        lines.append(f"  acknowledged {ack['time_utc']}: {ack['finding']}")
    return "\n".join(lines)
