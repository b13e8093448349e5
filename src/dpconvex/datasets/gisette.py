"""Gisette (NIPS 2003 feature-selection challenge): read from user files only.

Nothing is downloaded. :func:`load_gisette` looks in ``path`` (or, if None, in
``$DPCONVEX_DATA`` or ``~/.cache/dpconvex``) for either the UCI files
``gisette_train.data`` + ``gisette_train.labels`` or the LIBSVM file ``gisette_scale``
(optionally ``.bz2``). :func:`gisette_surrogate` is a clearly named, shape-matched
stand-in (6,000 x 5,000) for when the real files are absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification

from .base import Dataset
from .files import load_libsvm


def data_dir(path: str | Path | None = None) -> Path:
    if path is not None:
        return Path(path)
    return Path(os.environ.get("DPCONVEX_DATA", Path.home() / ".cache" / "dpconvex"))


def find_gisette(path: str | Path | None = None) -> Path | None:
    """The directory or file holding Gisette, or None when it is not there."""
    root = data_dir(path)
    if root.is_file():
        return root
    for candidate in ("gisette_train.data", "gisette_scale", "gisette_scale.bz2"):
        if (root / candidate).is_file():
            return root / candidate
    if (root / "gisette").is_dir():
        return find_gisette(root / "gisette")
    return None


def load_gisette(path: str | Path | None = None) -> Dataset:
    """Gisette from the UCI or LIBSVM files; raises FileNotFoundError naming where it looked."""
    found = find_gisette(path)
    if found is None:
        raise FileNotFoundError(
            f"Gisette not found in {data_dir(path)} (looked for gisette_train.data + "
            "gisette_train.labels, or gisette_scale[.bz2]); nothing is downloaded: place the "
            "files there or pass path="
        )
    if found.name == "gisette_train.data":
        X = np.loadtxt(found)
        labels = np.loadtxt(found.with_name("gisette_train.labels"))
        y = (labels > 0).astype(int)
        return Dataset("gisette", X, y, [f"x{i}" for i in range(X.shape[1])], ["-1", "1"])
    data = load_libsvm(found)
    y = (data.y > 0).astype(int)
    return Dataset("gisette", data.X, y, data.feature_names, ["-1", "1"])


def gisette_surrogate(random_state: int = 0) -> Dataset:
    """NOT Gisette: a shape-matched synthetic stand-in (6,000 x 5,000, binary).

    Gisette has 5,000 features of which about half are informative-looking
    "probes"; here 50 informative and 4,950 noise features from make_classification.
    """
    X, y = make_classification(
        n_samples=6_000,
        n_features=5_000,
        n_informative=50,
        n_redundant=0,
        class_sep=1.0,
        random_state=random_state,
    )
    return Dataset(
        "gisette-surrogate",
        X,
        y,
        [f"x{i}" for i in range(5000)],
        ["0", "1"],
        gisette_surrogate.__doc__ or "",
    )
