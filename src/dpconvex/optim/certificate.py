"""The refusal of the certified solvers: no certificate, nothing released.

Messages carry no number (a gradient norm, a tolerance scaled by n or an iteration
count would reveal the data).
"""

from __future__ import annotations

#: the one message of :class:`CertificateError` raised by :func:`dpconvex.optim.solve`
CERTIFICATE_MESSAGE = (
    "the solver could not certify its solution (||grad|| <= tau) in floating-point arithmetic; "
    "nothing is released: raise tau, which is below the rounding error of the gradient"
)

#: the one message of :class:`CertificateError` raised by
#: :func:`dpconvex.optim.accelerated.certified_minimize`
GAP_CERTIFICATE_MESSAGE = (
    "the solver could not certify the requested accuracy in floating-point arithmetic; nothing "
    "is released: raise the accuracy, which is below the rounding allowance of the certificate"
)


class CertificateError(RuntimeError):
    """The solver did not reach ||grad|| <= tau; nothing may be released."""
