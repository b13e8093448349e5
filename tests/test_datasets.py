"""Bundled Adult and the CSV loader."""

import numpy as np
import pytest

from dpconvex.datasets import load_adult, load_csv
from dpconvex.datasets.adult import CONTINUOUS_SCALE


def test_adult_shape_labels_and_fixed_scaling():
    d = load_adult()
    assert d.X.shape == (45_222, 104)
    assert int(d.y.sum()) == 11_208  # >50K among complete rows
    assert len(d.feature_names) == 104
    assert d.X.min() >= 0 and d.X.max() <= 1.0  # fixed constants are the schema maxima
    assert CONTINUOUS_SCALE["age"] == 90.0
    # every row has exactly one category per categorical column (8 of them)
    onehot = np.array(["=" in name for name in d.feature_names])
    assert onehot.sum() == 98
    assert np.all((d.X[:, onehot] > 0).sum(axis=1) == 8)


def test_split_is_deterministic_and_disjoint():
    d = load_adult()
    a = d.split(0.2, seed=3)
    b = d.split(0.2, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert a[0].shape[0] + a[1].shape[0] == 45_222
    assert a[1].shape[0] == round(0.2 * 45_222)


def test_csv_loader(tmp_path):
    path = tmp_path / "toy.csv"
    path.write_text("a,label,b\n1,yes,2\n3,no,4.5\n")
    d = load_csv(path, "label")
    np.testing.assert_allclose(d.X, [[1, 2], [3, 4.5]])
    assert list(d.y) == ["yes", "no"] and d.feature_names == ["a", "b"]
    with pytest.raises(ValueError, match="target column 'y'"):
        load_csv(path, "y")
    path.write_text("a,label\nred,1\n")
    with pytest.raises(ValueError, match="column 'a' is not numeric"):
        load_csv(path, "label")
    path.write_text("a,label\nnan,1\n")
    with pytest.raises(ValueError, match="column 'a'"):
        load_csv(path, "label")
    with pytest.raises(ValueError, match="no such data file"):
        load_csv(tmp_path / "missing.csv", "label")
