"""Declared table schemas shared by the tests of raw tables, in the dict form a schema file holds.

Each is built afresh by a function, so a test that edits its copy changes no other test.
"""

from __future__ import annotations


def age_estimated() -> dict:
    """Age with both ends estimated privately in the public range [0, 200]."""
    return {"name": "age", "type": "numeric", "bounds": [None, None], "search_range": [0, 200]}


def pay_estimated() -> dict:
    """Pay from a declared 0 to a top estimated privately after log1p, in [0, 1e9]."""
    return {"name": "pay", "type": "numeric", "bounds": [0, None], "search_range": [0, 1e9],
            "log": "log1p"}  # fmt: skip


def job(**options) -> dict:
    """Job, a category "a" or "b" (with ``options`` such as ``other`` or ``missing``)."""
    return {"name": "job", "type": "categorical", "categories": ["a", "b"], **options}


def jobs_schema() -> dict:
    """Age and pay estimated privately, job a category: the encoder's and search's table."""
    return {"columns": [age_estimated(), pay_estimated(), job()]}


def cities_schema() -> dict:
    """Age declared in [18, 90], city Paris or Lyon, income's top estimated after log1p: the
    table of the model-file and CLI tests."""
    return {
        "columns": [
            {"name": "age", "type": "numeric", "bounds": [18, 90]},
            {"name": "city", "type": "categorical", "categories": ["Paris", "Lyon"]},
            {"name": "income", "type": "numeric", "bounds": [0, None],
             "search_range": [0, 1e7], "log": "log1p"},
        ]
    }  # fmt: skip
