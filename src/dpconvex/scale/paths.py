"""Which files a table path names: a Parquet file or directory, or CSV files (a glob)."""

from __future__ import annotations

from pathlib import Path


def _is_parquet(text: str) -> bool:
    """A Parquet file (.parquet or .pq, as the in-memory readers take it) or a directory."""
    return text.lower().endswith((".parquet", ".pq")) or Path(text).is_dir()


def _csv_files(text: str) -> tuple[list[str], list[str]]:
    """(the CSV files ``text`` names, as a path or a glob, their common header)."""
    import glob

    from ..datasets.files import csv_header

    names = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
    if not names or not Path(names[0]).exists():
        raise FileNotFoundError(f"no such CSV file: {text}")
    header = csv_header(names[0])
    for name in names[1:]:
        other = csv_header(name)
        if other != header:
            raise ValueError(
                f"{Path(name).name}: its header differs from that of {Path(names[0]).name}; "
                "every file must hold the same columns in the same order"
            )
    return names, header
