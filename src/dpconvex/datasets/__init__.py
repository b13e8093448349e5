"""Data sets: bundled UCI Adult and user-supplied files."""

from .adult import load_adult
from .base import Dataset
from .files import load_csv

__all__ = ["Dataset", "load_adult", "load_csv"]
