"""Parquet tables as numeric row chunks: one chunk per file, each footer checked first."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

#: Where a table with text columns goes (the readers above read numeric matrices).
_TEXT_ROUTE = (
    "read_table and read_parquet read numeric matrices only: read a table with text columns with "
    "dpconvex.scale.data.read_frame and encode it by a declared schema "
    "(dpconvex.preprocessing.TableEncoder; command line: --schema)"
)


def read_parquet(path: str | Path, target: str | None, features: list[str] | None = None):
    """(X, y) as dask arrays over Parquet files, one row chunk per file (lazily).

    ``path`` is a Parquet file or a directory of them (read in name order). Only the
    files' footers are read here: the chunk sizes come from their row counts, so no
    pass is spent finding them, and every file's schema is checked against the first
    file's (the same columns with the same types; features numeric, the target numeric
    or text) before anything is read. Each chunk of ``X`` reads only the ``features``
    columns of its file (default: every column but ``target``) into a float64 matrix,
    and each chunk of ``y`` only the ``target`` column, so a look at the labels reads a
    hundredth of the data, not all of it. ``target=None`` returns ``(X, None)``.
    Files must be regular files (inside the directory, if one is given); a file whose
    rows differ from its footer's count, or with missing values (nulls), is refused
    when its chunk is read. Needs ``pyarrow`` (in the ``dask`` extra).
    """
    from functools import partial

    import dask.array as da

    files, schema, features, rows = _checked_parquet(Path(path), target, features)
    _check_parquet_rows(rows, files, len(features))
    # one task per file, keyed by its row chunk (name, i, 0): a fit that reads the first
    # chunks first (dpconvex.scale.fit.cache_rows) can name them by their keys
    X = da.map_blocks(
        partial(_parquet_matrix, files, rows, features),
        chunks=(rows, (len(features),)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
    )
    if target is None:
        return X, None
    dtype = schema.field(target).type.to_pandas_dtype()
    y = da.map_blocks(
        partial(_parquet_column, files, rows, target),
        chunks=(rows,),
        dtype=dtype,
        meta=np.empty(0, dtype),
    )
    return X, y


def _checked_parquet(root: Path, target: str | None, features: list[str] | None, text=False):
    """(files, the first file's schema, feature columns, row counts) of the Parquet file
    or directory ``root``, after checking every file's footer against the first's (and
    the columns' types: numeric features, or with ``text``, numbers or text)."""
    files = _parquet_files(root)
    footers = [_parquet_footer(f, label) for f, label in files]
    schemas = [schema for schema, _ in footers]
    schema, first = schemas[0], files[0][1]
    if target is not None and target not in schema.names:
        raise ValueError(f"target column {target!r} not in {first} (columns: {schema.names})")
    features = [c for c in schema.names if c != target] if features is None else list(features)
    missing = [c for c in features if c not in schema.names]
    if missing:
        raise ValueError(f"feature columns {missing} not in {first} (columns: {schema.names})")
    if text:
        _check_frame_types(schema, first, features)
    else:
        _check_parquet_types(schema, first, features, target)
    for other, (_, label) in zip(schemas[1:], files[1:], strict=True):
        _same_schema(schema, other, first, label)
    return files, schema, features, tuple(rows for _, rows in footers)


def _parquet_files(root: Path) -> list[tuple[str, str]]:
    """[(resolved path, name in messages), ...]: the file ``root`` or the ``*.parquet``
    files of the directory ``root`` in name order, each a regular file (in the directory)."""
    from .zarr_chunks import MAX_CHUNKS, regular_file

    if not root.exists():
        raise FileNotFoundError(f"no such Parquet file or directory: {root}")
    if not root.is_dir():
        real = regular_file(root, str(root))
        if real is None:
            raise FileNotFoundError(f"no such Parquet file or directory: {root}")
        return [(real, str(root))]
    inside = os.path.realpath(root)
    names = sorted(p.name for p in root.iterdir() if p.name.endswith(".parquet"))
    if not names:
        raise ValueError(f"no .parquet files in {root}")
    if len(names) > MAX_CHUNKS:
        raise ValueError(f"{root} holds {len(names)} Parquet files; at most {MAX_CHUNKS} are read")
    files = []
    for name in names:
        label = f"{root.name}/{name}"
        real = regular_file(root / name, label, inside)
        if real is None:
            raise ValueError(f"{label} is a link to nothing")
        files.append((real, label))
    return files


def _parquet_footer(path: str, label: str):
    """(arrow schema, row count) from a Parquet file's footer, reading no data."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except Exception as error:  # noqa: BLE001 - pyarrow's refusal of a hostile footer
        raise ValueError(f"{label} is not a readable Parquet file ({_brief(error)})") from None
    duplicated = sorted({n for n in schema.names if schema.names.count(n) > 1})
    if duplicated:
        raise ValueError(f"{label} names columns {duplicated} more than once")
    return schema, meta.num_rows


def _check_parquet_types(schema, label: str, features: list[str], target: str | None) -> None:
    import pyarrow.types as pt

    bad = [f"{c} ({schema.field(c).type})" for c in features if not _numeric(schema.field(c).type)]
    if bad:
        raise ValueError(
            f"{label}: feature columns must be numeric (integer, float or bool); not numeric: "
            f"{bad}; {_TEXT_ROUTE}"
        )
    if target is not None:
        kind = schema.field(target).type
        if not (_numeric(kind) or pt.is_string(kind) or pt.is_large_string(kind)):
            raise ValueError(
                f"{label}: the target column {target!r} is {kind}; labels must be numbers or text"
            )


def _same_schema(schema, other, first: str, label: str) -> None:
    """Refuse a file whose columns or their types differ from the first file's."""
    if set(other.names) != set(schema.names):
        missing = [c for c in schema.names if c not in other.names]
        extra = [c for c in other.names if c not in schema.names]
        raise ValueError(
            f"{label}: its columns differ from those of {first} (missing {missing}, "
            f"extra {extra}); every file must hold the same columns"
        )
    for name in schema.names:
        want, got = schema.field(name).type, other.field(name).type
        if not got.equals(want):
            raise ValueError(
                f"{label}: column {name!r} is {got}, but {want} in {first}; every file must "
                "give a column the same type"
            )


def _check_parquet_rows(rows, files, width: int) -> None:
    from .zarr_chunks import MAX_CHUNK_BYTES

    for count, (_, label) in zip(rows, files, strict=True):
        if count * max(width, 1) * 8 > MAX_CHUNK_BYTES:
            raise ValueError(
                f"{label} holds {count} rows of {width} features, read as one chunk of more "
                f"than {MAX_CHUNK_BYTES} bytes: split it into smaller files"
            )


def _numeric(arrow_type) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return pt.is_integer(arrow_type) or pt.is_floating(arrow_type) or pt.is_boolean(arrow_type)


def _brief(error: BaseException) -> str:
    from .zarr_chunks import _brief as brief

    return brief(error)


def _is_text(arrow_type) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return pt.is_string(arrow_type) or pt.is_large_string(arrow_type)


def _check_frame_types(schema, label: str, columns: list[str]) -> None:
    bad = [
        f"{c} ({schema.field(c).type})"
        for c in columns
        if not (_numeric(schema.field(c).type) or _is_text(schema.field(c).type))
    ]
    if bad:
        raise ValueError(
            f"{label}: columns must hold numbers (integer, float or bool) or text; not "
            f"read: {bad}; convert them when writing the file, or leave them out (columns=)"
        )


def _parquet_table(
    file: tuple[str, str],
    rows: int,
    columns: list[str],
    numeric: bool = True,
    nulls=False,
    dictionary=None,
):
    """The ``columns`` of the Parquet file (path, name), checked: still a regular file, the
    rows its footer declares, no missing values (unless ``nulls``); the ``dictionary``
    columns read dictionary-encoded (each distinct text held once)."""
    import pyarrow.parquet as pq

    from .zarr_chunks import regular_file

    path, label = file
    if regular_file(path, label) is None:
        raise ValueError(f"{label} no longer exists")
    try:
        table = pq.read_table(path, columns=columns, read_dictionary=dictionary)
    except Exception as error:  # noqa: BLE001 - pyarrow's refusal of a hostile file
        raise ValueError(f"{label} cannot be read ({_brief(error)})") from None
    if table.num_rows != rows:
        raise ValueError(f"{label} holds {table.num_rows} rows; its footer declares {rows}")
    for name, column in zip(columns, table.columns, strict=True):
        if numeric and not _numeric(column.type):
            raise ValueError(f"{label}: column {name!r} reads as {column.type}, not numbers")
        if column.null_count and not nulls:
            raise ValueError(
                f"{label}: column {name!r} has missing values (nulls); drop those rows or "
                "impute the values first"
            )
    return table


def _parquet_matrix(files, rows, columns: list[str], block_id=None) -> np.ndarray:
    """The columns of file ``block_id[0]`` as an n x d float64 matrix (filled column by column)."""
    i = block_id[0]
    table = _parquet_table(files[i], rows[i], columns)
    out = np.empty((len(columns), table.num_rows))
    for j, column in enumerate(table.columns):
        out[j] = column.to_numpy()
    return out.T


def _parquet_column(files, rows, column: str, block_id=None) -> np.ndarray:
    i = block_id[0]
    return _parquet_table(files[i], rows[i], [column], numeric=False).column(0).to_numpy()
