"""``dpconvex counting``, importable here; the command lives in :mod:`dpconvex.cli.counting`."""

from __future__ import annotations

from ..cli.counting import counting

__all__ = ["counting"]
