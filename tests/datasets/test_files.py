"""Careless and hostile CSV files: one clear error naming the file, line and column
(review of the readers, issue 31 item 8)."""

import os
import threading
import tracemalloc

import numpy as np
import pytest

from dpconvex.datasets import files, load_csv, load_csv_features, load_libsvm


def _csv(tmp_path, text, name="d.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def _refused(path, match, **kwargs):
    with pytest.raises(ValueError, match=match) as info:
        load_csv(path, kwargs.get("target", "label"))
    assert "\n" not in str(info.value)
    return str(info.value)


def test_a_200000_character_field_is_refused_naming_line_and_column(tmp_path):
    """It raised the csv module's own error (a traceback in the CLI)."""
    path = _csv(tmp_path, "a,b,label\n1,2,0\n1," + "9" * 200_000 + ",1\n")
    message = _refused(path, r"^d\.csv, line 3: column 'b': field larger than field limit")
    assert len(message) < 200


@pytest.mark.parametrize("digits", ["١٢", "１２", "١.٥e٣", "۳"])  # Arabic-Indic, full-width
def test_non_ascii_digits_are_refused_not_read_as_numbers(tmp_path, digits):
    """float() reads them; they were taken as numbers."""
    path = _csv(tmp_path, f"a,b,label\n1,2,0\n{digits},3,1\n")
    where = r"in column 'a' \(first on line 3\)"
    _refused(path, rf"^d\.csv: numbers written with digits other than 0-9 {where}")


def test_non_ascii_digit_labels_stay_labels_not_numbers(tmp_path):
    """numpy read '١' as 1.0, merging it with the label '1'."""
    path = _csv(tmp_path, "a,label\n1,1\n2,١\n3,1\n")
    y = load_csv(path, "label").y
    assert y.dtype.kind == "U" and sorted(set(y)) == ["1", "١"]


def test_underscores_are_not_digit_groups(tmp_path):
    path = _csv(tmp_path, "a,label\n1_000,1\n2,0\n")
    _refused(path, r"column 'a' holds text \(first on line 2")


@pytest.mark.parametrize(
    ("header", "match"),
    [
        ("a,a,label", r"^d\.csv: the header names \['a'\] more than once"),
        ("a, a ,label", r"the header names \['a'\] more than once"),
        (",a,label", r"^d\.csv: column 1 of the header has no name"),
    ],
)
def test_a_header_with_a_repeated_or_empty_name_is_refused(tmp_path, header, match):
    """A repeated name was accepted (the later column shadowing the earlier)."""
    path = _csv(tmp_path, f"{header}\n1,2,0\n3,4,1\n")
    _refused(path, match)
    with pytest.raises(ValueError, match=match):
        load_csv_features(path, ["a"])


def test_text_that_is_not_utf8_names_its_line(tmp_path):
    path = _csv(tmp_path, "a,label\n1,0\n2,café\n", encoding="latin-1")
    _refused(path, r"^d\.csv, line 3 is not UTF-8 text \(byte 0xe9 at position 5\)")


def test_nul_bytes_empty_files_header_only_and_ragged_rows(tmp_path):
    _refused(_csv(tmp_path, b"a,label\n1\x00,0\n"), r"^d\.csv, line 2 holds a NUL byte")
    _refused(_csv(tmp_path, b""), r"d\.csv is empty$")
    _refused(_csv(tmp_path, b"a,label\n"), r"d\.csv has no data rows$")
    _refused(_csv(tmp_path, b"a,b,label\n1,2,0\n3,4\n"), r"^d\.csv, line 3: 2 fields, expected 3$")
    _refused(_csv(tmp_path, b'a,label\n1,"open\n2,1\n'), r"^d\.csv, line 3: unexpected end of data")


def test_a_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    data = load_csv(_csv(tmp_path, "\ufeffa,label\n1,0\n2,1\n"), "label")
    assert data.feature_names == ["a"]


def test_line_length_and_column_count_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_LINE", 64)
    _refused(_csv(tmp_path, "a,label\n" + "1" * 100 + ",0\n"), r"^d\.csv, line 2 is longer than 64")
    monkeypatch.setattr(files, "MAX_COLUMNS", 3)
    _refused(_csv(tmp_path, "a,b,c,label\n1,2,3,0\n"), r"^d\.csv has 4 columns; at most 3")


def test_labels_must_be_finite_and_short(tmp_path):
    _refused(
        _csv(tmp_path, "a,label\n1,inf\n2,1\n"),
        r"the label in column 'label' on line 2 is not finite; labels must be finite",
    )
    long = "x" * 100
    _refused(_csv(tmp_path, f"a,label\n1,{long}\n2,b\n"), r"line 2 is longer than 64 characters")


def test_long_cells_are_shown_shortened(tmp_path):
    message = _refused(_csv(tmp_path, "a,label\n" + "x" * 5000 + ",0\n"), "holds text")
    assert len(message) < 400


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    path = tmp_path / "d.csv"
    os.mkfifo(path)
    outcome = []
    thread = threading.Thread(
        target=lambda: outcome.append(pytest.raises(ValueError, load_csv, path, "label")),
        daemon=True,
    )
    thread.start()
    thread.join(10)
    assert outcome and "is not a regular file" in str(outcome[0].value)
    with pytest.raises(ValueError, match="is not a regular file"):
        load_libsvm(path)


def test_reading_keeps_no_string_per_cell(tmp_path):
    """Memory: floats as they are read (8 bytes a value), not a list of strings per cell."""
    rows = 4_000
    values = np.arange(rows * 10, dtype=np.float64).reshape(rows, 10)
    lines = "\n".join(",".join(f"{v:g}" for v in row) + ",1" for row in values)
    path = _csv(tmp_path, ",".join(f"x{j}" for j in range(10)) + ",label\n" + lines + "\n")
    tracemalloc.start()
    try:
        data = load_csv(path, "label")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(data.X, values)
    assert peak < 4 * values.nbytes  # the old reader kept ~60 bytes a cell: 7.5x
