"""Raw tables (text and numbers) as dask DataFrames, for a schema's encoder."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .parquet import _brief, _checked_parquet, _is_text, _numeric, _parquet_table
from .paths import _csv_files, _is_parquet

#: Default bytes of CSV text per partition of :func:`read_frame`.
FRAME_BLOCKSIZE = 16 * 2**20


#: Largest CSV block :func:`read_frame` accepts as ``blocksize``.
MAX_FRAME_BLOCKSIZE = 2**28


def read_frame(path: str | Path, columns: list[str] | None = None, *, blocksize=FRAME_BLOCKSIZE):
    """A raw table as a lazy dask DataFrame: numbers as float64, text as strings.

    ``path`` is a Parquet file or a directory of them (one partition per file, in name
    order), or a CSV file or glob (partitions of about ``blocksize`` bytes of text, an
    int or a string such as ``"16MB"``). ``columns`` selects columns by name (default:
    all), for instance the schema's columns and the target. For
    :class:`~dpconvex.preprocessing.TableEncoder` and :func:`split_frame`.

    * Parquet: integer and float columns (plain or dictionary-encoded) become float64
      with NaN where missing; string columns stay text, as pandas categories (each
      distinct text held once per partition) with NaN where missing; bool columns
      become the texts "true" and "false" (categories, NaN where missing), the words
      the in-memory reader (:func:`dpconvex.datasets.parquet.load_parquet_cells`) gives
      the encoder, so a schema reads them alike in and out of core; any other type is
      refused naming the column. Every
      file's footer is checked against the first's before anything is read, as by
      :func:`read_parquet` (regular files inside the directory, the same columns and
      types), and a file is refused when its footer promises a partition of more than
      ``MAX_CHUNK_BYTES`` bytes (8 bytes per value, plus the text columns' uncompressed
      size, which bounds their distinct texts).
    * CSV: a CSV file has no types, so every cell is read as text, exactly as written
      (an empty field is the empty text): the encoder parses numbers and missing-value
      markers by the schema, by the same rules as for a table in memory. Every file must
      be a regular file whose checked header is the first file's; a partition is the
      lines that start in its block of bytes, and every line must hold the header's
      number of fields and be UTF-8 without NUL bytes. A block's first and last lines
      are searched for at most ``MAX_LINE`` bytes beyond its ends (a longer line there
      is refused), so a partition holds at most ``blocksize + 2 * MAX_LINE`` bytes. A
      quoted field spanning lines is read right inside a block, but not across a
      block's end: keep such files in Parquet, or give a blocksize above the file size.

    Nothing but footers and headers is read here; errors found while a partition is
    read name its file and say what to change, never a cell's content. Memory per
    partition: the CSV block and its cells, or one Parquet file's selected columns.
    """
    import dask.dataframe as dd

    text = str(path)
    wanted = _column_names(columns)
    size = _blocksize(blocksize)
    if _is_parquet(text):
        files, schema, names, rows = _checked_parquet(Path(text), None, wanted, text=True)
        kinds = tuple(_frame_kind(schema.field(c).type) for c in names)
        _check_frame_sizes(files, rows, names)
        parts = [(file, count) for file, count in zip(files, rows, strict=True)]
        reader = _ParquetPart(tuple(names), kinds)
    else:
        names, header = _csv_files(text)
        if wanted is not None:
            missing = [c for c in wanted if c not in header]
            if missing:
                raise ValueError(f"columns {missing} not in {text} (columns: {header})")
        parts = _csv_blocks(names, size)
        names, kinds = wanted or header, ("text",) * len(wanted or header)
        reader = _CsvPart(tuple(header), tuple(names))
    return dd.from_map(reader, parts, meta=_frame_meta(names, kinds), enforce_metadata=False)


def frame_target(frame, name: str, *, numeric: bool = False):
    """The column ``name`` of a dask DataFrame as the estimators' ``y`` (a dask Series).

    ``numeric=False``: the column as it is (class labels, text or numbers).
    ``numeric=True``: float64, each cell a finite number (a number as stored, or text
    written in ASCII digits, as the encoder reads numeric cells); a partition holding
    anything else (text, a missing value, an infinity) is refused when it is read, by
    the column's name, never by the cell. For a CSV target read by :func:`read_frame`,
    whose cells are text.
    """
    if not isinstance(name, str) or name not in [str(c) for c in frame.columns]:
        raise ValueError(f"the table has no column {str(name)[:200]!r}")
    column = frame[name]
    if not numeric:
        return column
    return column.map_partitions(_finite_numbers, name, meta=(name, "float64"))


def _finite_numbers(cells, name: str):
    """A pandas Series of cells as float64; ValueError naming the column otherwise."""
    import pandas as pd

    from ..preprocessing.columns import _number

    raw = cells.to_numpy()
    if raw.dtype.kind in "biuf":
        values = raw.astype(np.float64)
    else:
        values = np.array([_finite_or_nan(_number(c)) for c in raw], dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"the target column {name!r} holds a value that is not a finite number (text, "
            "a missing value or an infinity); targets must be finite numbers"
        )
    return pd.Series(values, index=cells.index, name=cells.name)


def _finite_or_nan(x: float | None) -> float:
    return np.nan if x is None else x


def _column_names(columns) -> list[str] | None:
    if columns is None:
        return None
    if isinstance(columns, str) or not isinstance(columns, list | tuple):
        raise TypeError("columns must be a list of column names or None")
    names = list(columns)
    if not names or not all(isinstance(c, str) for c in names):
        raise ValueError("columns must be a non-empty list of column names (strings)")
    if len(set(names)) != len(names):
        raise ValueError("columns names a column more than once")
    return names


def _blocksize(blocksize) -> int:
    from dask.utils import parse_bytes

    try:
        size = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    except (ValueError, TypeError):
        size = None
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_FRAME_BLOCKSIZE:
        raise ValueError(
            f"blocksize must be a number of bytes from 1 to {MAX_FRAME_BLOCKSIZE} (e.g. '16MB')"
        )
    return size


def _frame_kind(arrow_type) -> str:
    """How read_frame holds a Parquet column: "number", "boolean" (read as the words
    "true"/"false") or "category" (text)."""
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pt.is_boolean(arrow_type):
        return "boolean"
    return "number" if _numeric(arrow_type) else "category"


def _reads_as(arrow_type, kind: str) -> bool:
    """Whether a column read from a file has the kind its footer promised."""
    return _frame_kind(arrow_type) == kind if kind != "category" else _is_text(arrow_type)


def _check_frame_sizes(files, rows, columns: list[str]) -> None:
    """Refuse a Parquet file whose footer promises a partition beyond MAX_CHUNK_BYTES."""
    import pyarrow.parquet as pq

    from .zarr_chunks import MAX_CHUNK_BYTES

    for (path, label), count in zip(files, rows, strict=True):
        try:
            meta = pq.read_metadata(path)
        except Exception as error:  # noqa: BLE001 - changed since its footer was read
            raise ValueError(f"{label} is not a readable Parquet file ({_brief(error)})") from None
        names = [meta.schema.column(j).path.split(".")[0] for j in range(meta.num_columns)]
        size = sum(
            meta.row_group(g).column(j).total_uncompressed_size
            for g in range(meta.num_row_groups)
            for j, name in enumerate(names)
            if name in columns
        )
        if count * max(len(columns), 1) * 8 + size > MAX_CHUNK_BYTES:
            raise ValueError(
                f"{label} holds {count} rows whose columns take more than {MAX_CHUNK_BYTES} "
                "bytes in memory, read as one partition: split it into smaller files"
            )


def _text_dtype():
    import pandas as pd

    return pd.Series([], dtype="str").dtype


def _frame_meta(names, kinds):
    """The empty frame dask takes as the partitions' metadata: "number" columns float64,
    "text" strings, "category" categories not known in advance."""
    import pandas as pd
    from dask.dataframe.utils import clear_known_categories

    dtypes = {"number": "float64", "text": _text_dtype()}
    meta = pd.DataFrame(
        {
            c: pd.Series([], dtype=dtypes.get(k, "category"))
            for c, k in zip(names, kinds, strict=True)
        }
    )
    return clear_known_categories(meta)


def _frame_of(table, names, kinds):
    """A pandas DataFrame of an arrow table: numbers float64, text as read (strings, or
    categories for dictionary-encoded text), NaN where missing."""
    import pyarrow as pa

    columns = []
    import pyarrow.compute as pc

    columns = []
    for column, kind in zip(table.columns, kinds, strict=True):
        if kind in ("number", "boolean") and pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if kind == "number":
            column = column.cast(pa.float64())
        elif kind == "boolean":  # the in-memory reader's words; missing stays missing
            column = pc.if_else(column, "true", "false").dictionary_encode()
        columns.append(column)
    frame = pa.table(columns, names=list(names)).to_pandas()
    text = _text_dtype()
    for c, kind in zip(names, kinds, strict=True):
        if kind == "text" and frame[c].dtype != text and frame[c].dtype != "category":
            frame[c] = frame[c].astype(text)
    return frame


class _ParquetPart:
    """Reads one Parquet file (path, name) of read_frame into a partition."""

    def __init__(self, names: tuple, kinds: tuple):
        self.names, self.kinds = names, kinds

    def __call__(self, part):
        (path, label), rows = part
        text = [c for c, k in zip(self.names, self.kinds, strict=True) if k == "category"]
        table = _parquet_table(
            (path, label), rows, list(self.names), numeric=False, nulls=True, dictionary=text
        )
        for name, column, kind in zip(self.names, table.columns, self.kinds, strict=True):
            if not _reads_as(column.type, kind):
                raise ValueError(
                    f"{label}: column {name!r} reads as {column.type}, not as its footer says"
                )
        return _frame_of(table, self.names, self.kinds)


def _csv_blocks(names: list[str], blocksize: int) -> list[tuple]:
    """[(file, offset, length), ...]: every file cut into blocks of ``blocksize`` bytes."""
    from .zarr_chunks import MAX_CHUNKS

    blocks = []
    for name in names:
        size = os.stat(name).st_size
        blocks += [(name, offset, blocksize) for offset in range(0, max(size, 1), blocksize)]
        if len(blocks) > MAX_CHUNKS:
            raise ValueError(
                f"{name}: the CSV files make more than {MAX_CHUNKS} partitions of {blocksize} "
                "bytes; give a larger blocksize"
            )
    return blocks


class _CsvPart:
    """Reads the lines that start in one block of a CSV file into a partition of text."""

    def __init__(self, header: tuple, names: tuple):
        self.header, self.names = header, names

    def __call__(self, block):
        name, offset, length = block
        label = Path(name).name
        data = _csv_block(name, label, offset, length)
        return _frame_of(self._parse(data, label, offset), self.names, ("text",) * len(self.names))

    def _parse(self, data: bytes, label: str, offset: int):
        import io

        import pyarrow as pa
        import pyarrow.csv as pc

        if not data:  # no line starts in this block
            columns = [pa.array([], pa.large_string()) for _ in self.names]
            return pa.table(columns, names=list(self.names))
        where = f"{label} (the lines from byte {offset})"
        if b"\0" in data:
            raise ValueError(f"{where} hold a NUL byte: not a text (CSV) file")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{where} are not UTF-8 text: save the file as UTF-8") from None
        options = {
            "read_options": pc.ReadOptions(
                column_names=list(self.header), use_threads=False, block_size=len(data) + 1
            ),
            "parse_options": pc.ParseOptions(newlines_in_values=False),
            "convert_options": pc.ConvertOptions(
                column_types=dict.fromkeys(self.header, pa.large_string()),
                include_columns=list(self.names),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        }
        try:
            return pc.read_csv(io.BytesIO(data), **options)
        except (pa.ArrowInvalid, ValueError):  # its message quotes the line: not shown
            raise ValueError(
                f"{where}: a line does not split into the header's {len(self.header)} "
                "fields (or a quoted field spans lines, which this reader does not take)"
            ) from None


def _csv_block(name: str, label: str, offset: int, length: int) -> bytes:
    """The bytes of the lines of a CSV file that start in [offset, offset + length) (for
    offset 0, without the header line); every line searched for at most MAX_LINE bytes."""
    from ..datasets.files import MAX_LINE, _open_data

    with _open_data(Path(name)) as handle:
        # block 0 starts after the header line
        start = _line_start(handle, max(offset, 1), label, MAX_LINE)
        end = _line_start(handle, offset + length, label, MAX_LINE)
        if end <= start:
            return b""
        handle.seek(start)
        return handle.read(end - start)


def _line_start(handle, position: int, label: str, max_line: int) -> int:
    """The first line start at or after ``position`` (the file's end if none): the byte
    after the first newline in [position - 1, ...)."""
    handle.seek(position - 1)
    tail = handle.read(max_line + 1)
    if not tail:
        return handle.seek(0, os.SEEK_END)
    cut = tail.find(b"\n")
    if cut < 0:
        if len(tail) > max_line:
            raise ValueError(f"{label} holds a line longer than {max_line} bytes")
        return position - 1 + len(tail)
    return position + cut
