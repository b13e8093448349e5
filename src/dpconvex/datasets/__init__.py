"""Data sets: bundled UCI Adult, the exact synthetic recipes, and user-supplied files."""

from .adult import load_adult
from .base import Dataset
from .files import load_csv, load_csv_features, load_libsvm
from .gisette import find_gisette, gisette_surrogate, load_gisette
from .synthetic import load_synthetic_h, load_synthetic_l

LOADERS = {
    "adult": load_adult,
    "synthetic-l": load_synthetic_l,
    "synthetic-h": load_synthetic_h,
}

__all__ = [
    "LOADERS",
    "Dataset",
    "find_gisette",
    "gisette_surrogate",
    "load_adult",
    "load_csv",
    "load_csv_features",
    "load_gisette",
    "load_libsvm",
    "load_synthetic_h",
    "load_synthetic_l",
]
