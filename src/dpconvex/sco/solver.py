"""Certified optimizer O(J, alpha) of Su, Zhao & Wang (arXiv 2303.18047), Algorithms 1-2.

Accelerated projected gradient stopped by the gradient-mapping certificate
J(theta) - min_C J <= alpha; it is :func:`dpconvex.optim.accelerated.certified_minimize`,
the one implementation of Nesterov's method shared with :func:`dpconvex.optim.solve`,
and is importable from here under the name the DP-SCO documentation uses.
"""

from __future__ import annotations

from ..optim.accelerated import Certified, certified_minimize
from ..optim.certificate import CertificateError

__all__ = ["CertificateError", "Certified", "certified_minimize"]
