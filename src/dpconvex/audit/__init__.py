"""Empirical privacy audits: lower bounds on epsilon from worst-case runs of each mechanism."""

from .core import (
    MAX_RUNS,
    MIN_RUNS,
    AuditResult,
    audit_mechanism,
    audit_statistics,
    check_runs,
    clopper_pearson_upper,
    epsilon_lower_bound,
)
from .mechanisms import AUDITS


def run_audit(
    name: str, runs: int, *, seed: int | None = 0, fast: bool = False, progress: bool = False
) -> AuditResult:
    """Audit the named mechanism with ``runs`` runs on each of the two neighbouring inputs."""
    if name not in AUDITS:
        raise ValueError(f"unknown mechanism {name!r}; choose one of {sorted(AUDITS)}")
    runs = check_runs(runs)
    run, claimed, delta = AUDITS[name](fast)
    return audit_mechanism(
        name, run, runs, claimed_epsilon=claimed, delta=delta, seed=seed, progress=progress
    )


__all__ = [
    "AUDITS",
    "MAX_RUNS",
    "MIN_RUNS",
    "AuditResult",
    "audit_mechanism",
    "audit_statistics",
    "check_runs",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "run_audit",
]
