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
    with pytest.raises(ValueError, match="column 'a' holds text"):
        load_csv(path, "label")
    path.write_text("a,label\nnan,1\n")
    with pytest.raises(ValueError, match="column 'a'"):
        load_csv(path, "label")
    with pytest.raises(ValueError, match="no such data file"):
        load_csv(tmp_path / "missing.csv", "label")


def test_synthetic_recipes_are_exact_and_reproducible():
    from sklearn.datasets import make_classification

    from dpconvex.datasets import load_synthetic_h, load_synthetic_l

    low = load_synthetic_l()
    assert low.X.shape == (10_000, 40) and set(np.unique(low.y)) == {0, 1}
    X, y = make_classification(
        n_samples=10_000,
        n_features=40,
        n_informative=30,
        n_classes=2,
        class_sep=2.0,
        random_state=1000,
    )
    np.testing.assert_array_equal(low.X, X)
    np.testing.assert_array_equal(low.y, y)
    high = load_synthetic_h()
    assert high.X.shape == (2_000, 2_000)
    np.testing.assert_array_equal(high.X, load_synthetic_h().X)


def test_libsvm_and_gisette_from_user_files(tmp_path, monkeypatch):
    from dpconvex.datasets import find_gisette, gisette_surrogate, load_gisette, load_libsvm

    libsvm = tmp_path / "gisette_scale"
    libsvm.write_text("1 1:0.5 3:-1\n-1 2:2\n1 3:1\n")
    data = load_libsvm(libsvm)
    assert data.X.shape == (3, 3) and list(data.y) == [1, -1, 1]
    assert load_gisette(tmp_path).X.shape == (3, 3)
    assert list(load_gisette(tmp_path).y) == [1, 0, 1]
    uci = tmp_path / "uci"
    uci.mkdir()
    (uci / "gisette_train.data").write_text("1 0 3\n0 5 0\n")
    (uci / "gisette_train.labels").write_text("1\n-1\n")
    assert load_gisette(uci).X.shape == (2, 3)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("DPCONVEX_DATA", str(empty))
    assert find_gisette() is None
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        load_gisette()
    assert gisette_surrogate().name == "gisette-surrogate"


def test_a_vanishing_test_size_is_refused_at_once():
    """test_size 1e-300 once looped forever looking for the rows a split needs."""
    from dpconvex.datasets.base import _rows_to_split

    assert _rows_to_split(1e-300) > 10**299
    assert _rows_to_split(0.2) == 3  # round(0.2 * 3) = 1 test row, 2 training rows
