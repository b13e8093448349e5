"""dpconvex: differentially private convex learning with tight, cited, tested accounting."""

from . import accounting

__version__ = "0.1.0"

__all__ = ["accounting", "__version__"]
