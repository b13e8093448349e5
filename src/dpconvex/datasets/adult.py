"""UCI Adult, bundled (CC BY 4.0; see data/ADULT_SOURCE.md).

45,222 complete rows (rows with a missing value '?' dropped), 104 features:
6 continuous columns divided by fixed constants (the maxima of the UCI schema,
stored here, never recomputed from the data at fit time) and one-hot columns on
fixed category lists taken from adult.names ("Never-worked" is left out: every
such row has a missing occupation and is dropped). Label: income >50K.
"""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

from .base import Dataset

COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
)

#: Fixed divisors of the continuous columns (maxima of the UCI Adult schema).
CONTINUOUS_SCALE = {
    "age": 90.0,
    "fnlwgt": 1490400.0,
    "education-num": 16.0,
    "capital-gain": 99999.0,
    "capital-loss": 4356.0,
    "hours-per-week": 99.0,
}

#: Fixed category lists (adult.names), in the order used for one-hot columns.
CATEGORIES = {
    "workclass": [
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
    ],
    "education": [
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ],
    "marital-status": [
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ],
    "relationship": [
        "Wife",
        "Own-child",
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": [
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
    ],
}

N_ROWS = 45_222


def _read(name: str, skip: int) -> list[list[str]]:
    with resources.files(__package__).joinpath("data", name).open("rb") as raw:
        text = gzip.decompress(raw.read()).decode("ascii")
    rows = []
    for line in text.splitlines()[skip:]:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 15 and "?" not in fields:
            rows.append(fields)
    return rows


def feature_names() -> list[str]:
    names = []
    for col in COLUMNS:
        if col in CONTINUOUS_SCALE:
            names.append(col)
        else:
            names.extend(f"{col}={cat}" for cat in CATEGORIES[col])
    return names


def load_adult() -> Dataset:
    """The bundled UCI Adult data: X of shape (45222, 104), y in {0, 1} (1: income >50K).

    Rows keep the file order (adult.data, then adult.test). Rows are not
    normalized here: the estimators apply their row policy themselves.
    """
    rows = _read("adult.data.gz", 0) + _read("adult.test.gz", 1)
    n = len(rows)
    names = feature_names()
    X = np.zeros((n, len(names)))
    col = 0
    for j, name in enumerate(COLUMNS):
        values = [r[j] for r in rows]
        if name in CONTINUOUS_SCALE:
            X[:, col] = np.array(values, dtype=float) / CONTINUOUS_SCALE[name]
            col += 1
        else:
            index = {c: k for k, c in enumerate(CATEGORIES[name])}
            codes = np.array([index[v] for v in values])
            X[np.arange(n), col + codes] = 1.0
            col += len(index)
    y = np.array([1 if r[14].startswith(">50K") else 0 for r in rows])
    return Dataset(
        name="adult",
        X=X,
        y=y,
        feature_names=names,
        target_names=["<=50K", ">50K"],
        description=__doc__,
    )
