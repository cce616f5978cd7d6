"""Parquet files and Hugging Face `datasets` directories as tables of named columns, streamed.

Two formats, told apart by the path alone (`table_format`):

* a Parquet file (``.parquet`` / ``.pq``), read a batch of rows at a time (``iter_batches``);
* a directory written by ``Dataset.save_to_disk``: its ``state.json`` lists the shards
  (``_data_files``), each an Arrow IPC *stream* file, read batch by batch (memory-mapped). The
  column types come from ``dataset_info.json``'s ``features``; a ``ClassLabel`` column (or a list
  of them) is read as its label names, so a saved dataset gives the labels a TSV of it would.
  A ``DatasetDict`` (``dataset_dict.json`` and one directory per split) is refused with the
  split directories to choose from.

Only the current batch of rows is in memory. pyarrow reads both: it is the optional extra
``bertology[formats]``; without it the first table met fails with the install line.

    >>> table_format("wiki.parquet"), table_format("notes.txt")
    ('parquet', None)
    >>> source = open_table("train.parquet")                  # doctest: +SKIP
    >>> source.require_text("text")     # a missing or non-text column lists the text ones   # doctest: +SKIP
    >>> for index, row in source.records(): ...               # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterator

PARQUET_SUFFIXES = (".parquet", ".pq")
DATASET_FILES = ("state.json", "dataset_info.json")  # what save_to_disk writes beside its shards
DATASET_DICT = "dataset_dict.json"  # DatasetDict.save_to_disk: {"splits": [...]}, a directory per split
INSTALL = "pip install 'bertology[formats]'"
DEFAULT_TEXT_COLUMN = "text"  # the column a corpus is read from unless told another (--text-column)
BATCH_ROWS = 1024  # rows per Parquet batch: a bounded window, large enough that the per-batch cost vanishes
TEXT_TYPES = ("string", "large_string", "string_view")  # pyarrow's names (str of the DataType)
LIST_FEATURES = ("Sequence", "List", "LargeList")  # datasets' list features (older and newer names)


def is_text_type(arrow_type: str) -> bool:
    """A column of strings, plain or dictionary-encoded (pandas' categories, a Parquet writer's choice).

    >>> is_text_type("large_string"), is_text_type("dictionary<values=string, indices=int32, ordered=0>")
    (True, True)
    >>> is_text_type("int64"), is_text_type("list<item: string>")
    (False, False)
    """
    if arrow_type.startswith("dictionary<values="):
        arrow_type = arrow_type[len("dictionary<values=") :].split(",")[0]
    return arrow_type in TEXT_TYPES


class TableError(ValueError):
    """A table that cannot be read: names the file or directory and what is wrong with it."""


def table_format(path: str | os.PathLike) -> str | None:
    """ "parquet" for a .parquet / .pq file, "dataset" for a directory `datasets` saved (state.json,
    dataset_info.json, or a DatasetDict's dataset_dict.json in it), else None. The path alone decides.

    >>> table_format("train.PQ"), table_format("train.tsv")
    ('parquet', None)
    """
    p = os.fspath(path)
    if os.path.isdir(p):
        names = (*DATASET_FILES, DATASET_DICT)
        return "dataset" if any(os.path.isfile(os.path.join(p, n)) for n in names) else None
    return "parquet" if os.path.splitext(p)[1].lower() in PARQUET_SUFFIXES else None


def require_pyarrow(path: str):
    """pyarrow, or a TableError naming the file that needs it and the install line."""
    try:
        import pyarrow
        import pyarrow.ipc  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        what = "a Parquet file" if table_format(path) == "parquet" else "a datasets directory (Arrow files)"
        raise TableError(f"{path}: {what}; reading it needs pyarrow: {INSTALL}") from None
    return pyarrow


def _listing(columns) -> str:
    return ", ".join(repr(c) for c in columns) if columns else "(none)"


def _label_names(feature: Any) -> tuple[list[str], bool] | None:
    """(names, is_list) for a ClassLabel feature or a list of them (datasets' features JSON), else None."""
    if not isinstance(feature, dict):
        return None
    if feature.get("_type") == "ClassLabel" and isinstance(feature.get("names"), list):
        return [str(n) for n in feature["names"]], False
    inner = feature.get("feature")
    if feature.get("_type") in LIST_FEATURES and isinstance(inner, dict) and inner.get("_type") == "ClassLabel":
        return [str(n) for n in inner.get("names", [])], True
    return None


@dataclass
class TableSource:
    """One table: its columns and their Arrow types, the shards that hold its rows, the label names of
    its ClassLabel columns. `records()` streams the rows."""

    path: str
    format: str  # "parquet" or "dataset"
    types: dict[str, str]  # column -> Arrow type name, in column order
    files: list[str]  # the Parquet file, or the dataset's Arrow stream shards in order
    labels: dict[str, tuple[list[str], bool]] = field(default_factory=dict)  # ClassLabel columns: (names, is_list)
    num_rows: int | None = None  # known up front for a Parquet file (its footer); a dataset's shards are not opened

    @property
    def columns(self) -> list[str]:
        return list(self.types)

    @property
    def text_columns(self) -> list[str]:
        return [c for c, t in self.types.items() if is_text_type(t)]

    def where(self, index: int) -> str:
        """Where a row is, for messages: the row's index as `datasets` numbers it (from 0)."""
        return f"{self.path}: row {index}"

    def require(self, column: str, role: str = "column") -> None:
        if column not in self.types:
            raise TableError(
                f"{self.path}: no column {column!r} (the {role}); columns present: {_listing(self.columns)}"
            )

    def require_text(self, column: str, role: str = "text column") -> None:
        """The column exists and holds strings; otherwise an error naming it and listing the text columns."""
        self.require(column, role)
        if not is_text_type(self.types[column]):
            raise TableError(
                f"{self.path}: column {column!r} (the {role}) holds {self.types[column]}, not text; "
                f"text columns: {_listing(self.text_columns)} (all columns: {_listing(self.columns)})"
            )

    def records(self, columns: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        """(row index, {column: value}) for every row in order, a batch at a time; ClassLabel ids become
        their names (-1, datasets' "no label", becomes None). `columns`: read only these."""
        pa = require_pyarrow(self.path)
        index = 0
        for batch in self._batches(pa, columns):
            rows = batch.to_pylist()
            for name, (names, is_list) in self.labels.items():
                if name in batch.schema.names:
                    for row in rows:
                        row[name] = self._named(row[name], names, is_list, name, index)
            for row in rows:
                yield index, row
                index += 1

    def values(self, column: str) -> Iterator[Any]:
        """One column's values in row order, a batch at a time (no row dictionaries: the corpus readers' path);
        ClassLabel ids become their names as in `records`."""
        pa = require_pyarrow(self.path)
        index = 0
        for batch in self._batches(pa, [column]):
            values = batch.column(0).to_pylist()
            if column in self.labels:
                names, is_list = self.labels[column]
                values = [self._named(v, names, is_list, column, index + k) for k, v in enumerate(values)]
            index += len(values)
            yield from values

    def _batches(self, pa, columns):
        """The record batches of every file in order; unreadable data is a TableError naming the table, the
        row it starts at (rows counted across the files, as `where` numbers them) and the file holding it."""
        done = 0  # rows yielded so far: where an unreadable stretch starts
        for file in self.files:
            try:
                for batch in self._file_batches(pa, file, columns):
                    yield batch
                    done += batch.num_rows
            except (pa.ArrowException, OSError) as e:
                kind = "Parquet" if self.format == "parquet" else "Arrow stream"
                shard = "" if file == self.path else f" in {file}"
                raise TableError(
                    f"{self.where(done)}: unreadable {kind} data{shard} from this row on (the rows before it "
                    f"were read): {e}"
                ) from e

    def _file_batches(self, pa, file: str, columns):
        if self.format == "parquet":  # a row group at a time, so a bad one is found at its first row
            parquet = pa.parquet.ParquetFile(file)
            for group in range(parquet.num_row_groups):
                yield from parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=columns)
            return
        with pa.memory_map(file, "r") as source:  # the OS pages the shard in as batches are read
            for batch in pa.ipc.open_stream(source):
                if columns is not None:  # the stream has no column projection: keep the asked ones
                    batch = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
                yield batch

    def _named(self, value, names: list[str], is_list: bool, column: str, index: int):
        def name(i):
            if i is None or i == -1:
                return None
            if not 0 <= i < len(names):
                raise TableError(
                    f"{self.where(index)}: column {column!r} holds label id {i}, outside its "
                    f"{len(names)} ClassLabel names"
                )
            return names[i]

        if value is None:
            return None
        return [name(i) for i in value] if is_list else name(value)


def open_table(path: str | os.PathLike) -> TableSource:
    """The table at `path` (a Parquet file or a directory `Dataset.save_to_disk` wrote), checked and
    described; no row is read yet. Errors name the path: missing, a DatasetDict, no pyarrow, unreadable."""
    path = os.fspath(path)
    kind = table_format(path)
    if kind is None:
        raise TableError(f"{path}: neither a Parquet file (.parquet, .pq) nor a datasets directory (save_to_disk)")
    if kind == "parquet" and not os.path.isfile(path):
        raise TableError(f"{path}: no such file")
    if os.path.isfile(os.path.join(path, DATASET_DICT)):
        raise TableError(_dataset_dict_message(path))
    pa = require_pyarrow(path)
    if kind == "parquet":
        try:
            schema = pa.parquet.ParquetFile(path).schema_arrow
            rows = pa.parquet.ParquetFile(path).metadata.num_rows
        except (pa.ArrowException, OSError) as e:
            raise TableError(f"{path}: not a readable Parquet file: {e}") from e
        features = _schema_features(schema)
        return TableSource(path, kind, {f.name: str(f.type) for f in schema}, [path], _labels(features), rows)
    return _open_dataset(path, pa)


def _dataset_dict_message(path: str) -> str:
    try:
        splits = json.loads(open(os.path.join(path, DATASET_DICT), encoding="utf-8").read()).get("splits", [])
    except (OSError, ValueError, AttributeError):
        splits = []
    choices = ", ".join(os.path.join(path, s) for s in splits) or "its split directories"
    return f"{path}: a DatasetDict (several splits, see {DATASET_DICT}); give one split's directory, e.g. {choices}"


def _read_json(path: str, file: str) -> dict:
    try:
        with open(os.path.join(path, file), encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise TableError(
            f"{path}: no {file}, so not a directory Dataset.save_to_disk wrote (a load_dataset cache "
            "directory is not one: load it and call save_to_disk)"
        ) from None
    except ValueError as e:
        raise TableError(f"{os.path.join(path, file)}: not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise TableError(f"{os.path.join(path, file)}: expected a JSON object")
    return value


def _open_dataset(path: str, pa) -> TableSource:
    state = _read_json(path, "state.json")
    shards = state.get("_data_files")
    if not isinstance(shards, list) or not all(isinstance(s, dict) and "filename" in s for s in shards):
        raise TableError(f"{os.path.join(path, 'state.json')}: no list of data files (_data_files)")
    if state.get("_indices_data_files"):  # an indices mapping over the shards (datasets before 2.0)
        raise TableError(
            f"{path}: saved with an indices mapping; load it with datasets, call flatten_indices() "
            "and save_to_disk again"
        )
    files = [os.path.join(path, s["filename"]) for s in shards]
    for f in files:
        if not os.path.isfile(f):
            raise TableError(f"{f}: listed in {os.path.join(path, 'state.json')} but missing")
    if not files:
        raise TableError(f"{path}: a dataset with no data files")
    info = _read_json(path, "dataset_info.json") if os.path.isfile(os.path.join(path, "dataset_info.json")) else {}
    try:
        with pa.memory_map(files[0], "r") as source:
            schema = pa.ipc.open_stream(source).schema
    except (pa.ArrowException, OSError) as e:
        raise TableError(f"{files[0]}: not an Arrow stream file: {e}") from e
    features = info.get("features") if isinstance(info.get("features"), dict) else _schema_features(schema)
    return TableSource(path, "dataset", {f.name: str(f.type) for f in schema}, files, _labels(features))


def _schema_features(schema) -> dict:
    """datasets' features as it stores them in an Arrow schema's metadata (Parquet files it writes carry them)."""
    raw = (schema.metadata or {}).get(b"huggingface")
    try:
        features = json.loads(raw)["info"]["features"] if raw else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return features if isinstance(features, dict) else {}


def _labels(features: dict) -> dict[str, tuple[list[str], bool]]:
    return {name: found for name, feature in features.items() if (found := _label_names(feature)) is not None}


def iter_texts(path: str | os.PathLike, column: str) -> Iterator[str]:
    """The values of one text column, streamed; a null or blank value is skipped (as a blank line is in a text
    file). The column must exist and hold strings: the error lists the text columns there are."""
    source = open_table(path)
    source.require_text(column)
    for value in source.values(column):
        if value is not None and value.strip():
            yield value


def table_lines(path: str | os.PathLike, column: str) -> Iterator[str]:
    """The lines of one text column's values, each ending in a newline, as a text file holding the values
    one after another reads: a value is split at its newlines, a null or blank value skipped."""
    for text in iter_texts(path, column):
        for line in text.split("\n"):
            if line.strip():
                yield line + "\n"
