"""Solvers with a certified stopping rule for perturbed GLM objectives."""

from .objective import PerturbedGLMObjective
from .solvers import SOLVERS, CertificateError, SolverResult, solve

__all__ = ["SOLVERS", "CertificateError", "PerturbedGLMObjective", "SolverResult", "solve"]
