"""Adult's raw rows through the public schema match the bundled fixed features."""

import numpy as np
import pytest

from dpconvex.datasets import adult as fixed
from dpconvex.datasets import load_adult
from dpconvex.preprocessing import TableEncoder, adult_schema, load_adult_raw


@pytest.fixture(scope="module")
def both():
    return load_adult_raw(), load_adult()


def test_schema_is_public_knowledge_only():
    schema = adult_schema()
    assert [c.name for c in schema.columns] == list(fixed.COLUMNS)
    for col in schema.columns:
        if col.name in fixed.CATEGORIES:
            assert list(col.categories) == fixed.CATEGORIES[col.name]
    assert schema.n_estimated == 0 and adult_schema(estimate=True).n_estimated == 3


@pytest.mark.slow  # reads and encodes all 45,222 rows twice (~4 s)
def test_raw_rows_encode_to_the_fixed_features(both):
    (X, y, is_test), data = both
    assert X.shape == (fixed.N_ROWS, 14) and is_test.sum() == 15_060
    np.testing.assert_array_equal(y, data.y)
    rows = slice(0, 3000)
    enc = TableEncoder(adult_schema()).fit(X[rows])
    Z = enc.transform(X[rows])
    names = list(enc.get_feature_names_out())
    for j, name in enumerate(data.feature_names):
        mine = Z[:, names.index(name)]
        ref = data.X[rows, j]
        if name in fixed.CONTINUOUS_SCALE:  # a monotone map of the same column
            order = np.argsort(ref, kind="stable")
            assert np.all(np.diff(mine[order]) >= 0)
        else:  # the same one-hot column
            np.testing.assert_array_equal(mine, ref)
    # no category outside adult.names, no missing value in the complete rows
    assert not Z[:, [n.endswith(("<other>", "<missing>")) for n in names]].any()
    assert enc.row_bound_ == pytest.approx(14**0.5)


@pytest.mark.slow
def test_estimated_schema_prices_three_bounds_and_reads_question_marks(both):
    (X, _, _), _ = both
    schema = adult_schema(estimate=True, log_money=True)
    enc = TableEncoder(schema, epsilon=0.3, random_state=0).fit(X[:2000])
    assert enc.dp_event_.count == 3 and enc.epsilon_ == pytest.approx(0.3)
    lo, hi = enc.bounds_["capital-gain"]
    assert lo == 0.0 and 0.0 < hi <= np.log1p(1e7)
    rows = X[:3].copy()
    rows[0, 1], rows[1, 0], rows[2, 13] = "?", "?", "Atlantis"
    Z = enc.transform(rows)
    names = list(enc.get_feature_names_out())
    assert Z[0, names.index("workclass=<missing>")] == 1
    assert Z[1, names.index("age=<missing>")] == 1 and Z[1, names.index("age")] == 0
    assert Z[2, names.index("native-country=<other>")] == 1
