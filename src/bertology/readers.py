"""Reading task files with named columns: CSV, TSV, JSON lines, Parquet and datasets directories, chosen by the
path (the file's extension; a directory save_to_disk wrote).

    table = read_table("data/debian-sections/train.tsv")
    table.require(text_column="text", label_column="label")   # error lists the columns present
    for row in table.rows:
        row.text("text"), row["label"], row.where              # where = "train.tsv:2"

Formats (a first header line names the columns of CSV and TSV files):
  .csv            RFC 4180: comma separated, fields may be "quoted", "" is a quote inside quotes,
                  quoted fields may span lines;
  .tsv .tab       tab separated, NO quoting (as GLUE's files: a quote character is just a character),
                  a field cannot contain a tab or a newline;
  .jsonl .ndjson  one JSON object per line (blank lines skipped); values keep their JSON types;
  .parquet .pq    a Parquet file, and a directory `Dataset.save_to_disk` wrote: read by bertology.tables
                  (pyarrow, the extra bertology[formats]), values keep their Arrow types, ClassLabel ids
                  become their names; `where` is "file: row N" (N counted from 0, as datasets indexes).
Errors name file:line and, for a missing column, the columns that are there; a text column of a
Parquet or datasets table that holds no strings is refused with the text columns listed.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from .io import compression, open_corpus
from .tables import open_table, table_format

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}


def _listing(columns) -> str:
    return ", ".join(repr(c) for c in columns) if columns else "(none)"


@dataclass
class Row:
    """One record; `where` is "file:line" (the line the record starts on)."""

    values: dict[str, Any]
    where: str

    def __contains__(self, column: str) -> bool:
        return column in self.values

    def __getitem__(self, column: str) -> Any:
        try:
            return self.values[column]
        except KeyError:
            raise ValueError(f"{self.where}: no column {column!r}; columns present: {_listing(self.values)}") from None

    def get(self, column: str, default: Any = None) -> Any:
        return self.values.get(column, default)

    def text(self, column: str) -> str:
        """The value of a text column: a non-empty string, else a ValueError naming file:line."""
        value = self[column]
        if not isinstance(value, str):
            raise ValueError(f"{self.where}: column {column!r} should be text, got {type(value).__name__} {value!r}")
        if not value.strip():
            raise ValueError(f"{self.where}: column {column!r} is empty")
        return value

    def number(self, column: str) -> float:
        """The value of a numeric column as a float (a JSON number or a string such as "3.5")."""
        value = self[column]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"{self.where}: column {column!r} should be a number, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{self.where}: column {column!r} should be a number, got {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError(f"{self.where}: column {column!r} is not a finite number: {value!r}")
        return number


@dataclass
class Table:
    path: str
    columns: list[str]  # the header (CSV/TSV), every key seen in order of first appearance (JSON lines), the schema
    rows: list[Row] | Iterable[Row] = field(default_factory=list)  # an iterator with read_table(..., stream=True)
    text_columns: list[str] | None = None  # the string columns of a typed table (Parquet, datasets); None: untyped

    def require(self, **roles: str | None) -> None:
        """Check that each named column exists: require(text_column="sentence", label_column="label").
        A role given as None is not needed and not checked."""
        for role, column in roles.items():
            if column is not None and column not in self.columns:
                raise ValueError(
                    f"{self.path}: no column {column!r} (the {role}); columns present: {_listing(self.columns)}"
                )

    def require_text(self, **roles: str | None) -> None:
        """As `require`, and in a typed table each column holds strings (the error lists the ones that do);
        an untyped table (CSV, JSON lines) has its values checked row by row (`Row.text`)."""
        self.require(**roles)
        for role, column in roles.items():
            if column is not None and self.text_columns is not None and column not in self.text_columns:
                raise ValueError(
                    f"{self.path}: column {column!r} (the {role}) does not hold text; text columns: "
                    f"{_listing(self.text_columns)} (all columns: {_listing(self.columns)})"
                )


def file_format(path: str, format: str | None = None) -> str:
    """ "csv", "tsv" or "jsonl", from `format` or the extension.

    >>> file_format("train.tsv"), file_format("dev.jsonl.gz"), file_format("x.txt", "csv")
    ('tsv', 'jsonl', 'csv')
    """
    if format is not None:
        if format not in ("csv", "tsv", "jsonl"):
            raise ValueError(f"{path}: unknown format {format!r}; use csv, tsv or jsonl")
        return format
    ext = os.path.splitext(path[: -len(os.path.splitext(path)[1])] if compression(path) else path)[1].lower()
    if ext not in FORMATS:
        raise ValueError(
            f"{path}: cannot tell the format from the extension {ext or '(none)'!r}; "
            f"use one of {', '.join(sorted(FORMATS))}, .parquet / .pq, or a datasets directory"
        )
    return FORMATS[ext]


def read_text(path: str | os.PathLike) -> str:
    """A task file's text, or an error naming the file: missing, a directory, or not UTF-8 (with
    the offset of the first bad byte). A byte-order mark is dropped, not read as part of a name.
    A .gz, .xz or .bz2 file is read through its decompressor (io.open_corpus)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: a directory, not a data file")
    with open_corpus(path) as f:
        data = f.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not UTF-8 text (byte {e.start} is {data[e.start : e.start + 1]!r}); re-save the file as UTF-8"
        ) from None


def read_table(path: str | os.PathLike, format: str | None = None, stream: bool = False) -> Table:
    """The table of a task file. A Parquet file or a datasets directory is one whatever `format` says (a
    reader that asks for JSON lines takes their rows the same way). `stream=True`: `rows` is an iterator
    read once, a batch at a time for Parquet and datasets (the text formats are read whole either way)."""
    path = os.fspath(path)
    if table_format(path):
        source = open_table(path)
        rows = (Row(values, source.where(i)) for i, values in source.records())
        return Table(path, source.columns, rows if stream else list(rows), source.text_columns)
    fmt = file_format(path, format)
    f = io.StringIO(read_text(path), newline="")
    table = _read_jsonl(path, f) if fmt == "jsonl" else _read_delimited(path, f, fmt)
    if stream:
        table.rows = iter(table.rows)
    return table


def _read_delimited(path: str, f, fmt: str) -> Table:
    if fmt == "csv":
        reader = csv.reader(f, strict=True)
    else:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE, strict=True)
    records = []  # (line the record starts on, fields)
    start = 1
    try:
        for fields in reader:
            if fields:  # csv gives [] for a blank line
                records.append((start, fields))
            start = reader.line_num + 1
    except csv.Error as e:
        raise ValueError(f"{path}:{start}: malformed {fmt.upper()}: {e}") from None
    if not records:
        raise ValueError(f"{path}: empty file (a header line naming the columns is needed)")
    header_line, header = records[0]
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise ValueError(f"{path}:{header_line}: column name(s) {_listing(dupes)} appear more than once in the header")
    table = Table(path, header)
    for line, fields in records[1:]:
        if len(fields) != len(header):
            raise ValueError(
                f"{path}:{line}: {len(fields)} fields, but the header names {len(header)} columns ({_listing(header)})"
            )
        table.rows.append(Row(dict(zip(header, fields)), f"{path}:{line}"))
    return table


def _read_jsonl(path: str, f) -> Table:
    table = Table(path, [])
    seen: dict[str, None] = {}
    for line_no, line in enumerate(f, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            hint = (
                " (a JSON array? write one object per line)" if line_no == 1 and line.lstrip().startswith("[") else ""
            )
            raise ValueError(f"{path}:{line_no}: not valid JSON: {e.msg}{hint}") from None
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{line_no}: expected a JSON object per line, got {type(value).__name__}")
        for key in value:
            seen.setdefault(key)
        table.rows.append(Row(value, f"{path}:{line_no}"))
    table.columns = list(seen)
    return table
