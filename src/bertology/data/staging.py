"""A table's text column as a pretraining corpus (task-adaptive pretraining, Parquet, datasets).

    bertology pretrain --family bert --init minilm/ --corpus train.tsv --text-column text --out tapt/

Every reader of a corpus (tokenizer training, the token store, the permutation streams) takes text in
the lines format; a table corpus is staged into that format once, a record a document, and every
message about it names the user's own files and column, never the staged text.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator

from ..io import atomic_path, corpus_kind
from ..readers import read_table
from ..tables import DEFAULT_TEXT_COLUMN, table_format
from .corpus import iter_documents, split_sentences
from .recipe import Recipe
from .tokenized import check_corpus_documents, heldout_value

TASK_CORPUS = "task-corpus.txt"  # a table corpus's texts, a record a document, as the text corpus the jobs read
TASK_CORPUS_SOURCE = "task-corpus.source"  # beside it: the user's files and column, which messages name


def is_table_corpus(files: list[str], text_column: str | None) -> bool:
    """Whether --corpus is read as tables: --text-column given, or a Parquet file / datasets directory in it."""
    return text_column is not None or any(table_format(f) for f in files)


def table_corpus_name(files: list[str], column: str) -> str:
    """How a message names a table corpus: the user's files and the column read, never the staged text.

    >>> table_corpus_name(["train.csv"], "text")
    "train.csv (column 'text', a row a document)"
    """
    return f"{', '.join(map(str, files))} (column {column!r}, a row a document)"


def corpus_name(files: list[str]) -> str:
    """How a message names a corpus: its files, or for a staged table corpus (TASK_CORPUS with its
    TASK_CORPUS_SOURCE beside it) the user's files and column it was read from."""
    names = []
    for f in map(Path, files):
        source = f.with_name(TASK_CORPUS_SOURCE)
        names.append(source.read_text(encoding="utf-8") if f.name == TASK_CORPUS and source.is_file() else str(f))
    return ", ".join(names)


@contextmanager
def naming_the_users_files(staged: Path, name: str):
    """A ValueError raised inside that names the staged text file names the user's table (`name`) instead:
    the checks downstream read the staged file, but the user can only act on their own."""
    try:
        yield
    except ValueError as e:
        if e.args and isinstance(e.args[0], str) and str(staged) in e.args[0]:
            e.args = (e.args[0].replace(str(staged), name), *e.args[1:])
        raise


def iter_text_column(files: list[str], column: str, format: str = "lines") -> Iterator[list[str]]:
    """Each record's text in `column` of CSV / TSV / JSON-lines / Parquet files or datasets directories, a
    document of sentences (a record is a document, cut as --format raw cuts one), streamed: a Parquet file or
    a dataset a batch of rows at a time. A record whose text is null or blank is skipped, as a blank line is.
    Errors name the file and line or row (a missing column, or one that holds no text, lists those present).
    A text file among them (a folder of text beside tables) gives its documents as `format` reads them."""
    for path in files:
        if corpus_kind(path) == "text":
            yield from iter_documents([path], format)
            continue
        table = read_table(path, stream=True)
        table.require_text(text_column=column)
        for row in table.rows:
            if row.get(column) is None or (isinstance(row[column], str) and not row[column].strip()):
                continue
            text = " ".join(row.text(column).split())
            yield split_sentences(text) or [text]


def write_text_corpus(documents: Iterable[list[str]], file: Path) -> int:
    """One sentence per line, a blank line between documents: the corpus format pretraining reads. Streamed
    (a document at a time) and atomic; returns the number of documents."""
    n = 0
    with atomic_path(file) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for doc in documents:
            f.write(("\n" if n else "") + "\n".join(doc) + "\n")
            n += 1
    return n


def _draws_next_sentences(o) -> bool:
    """Whether the job pairs sentences across documents (BERT's NSP), which needs two documents in each split:
    pretrain options (they have a family) whose recipe says so; a distillation never does."""
    return hasattr(o, "family") and Recipe.from_options(o).pair_task == "nsp"


def stage_table_corpus(o, staging: Path):
    """`o` (options with corpus, text_column, format and heldout) itself for a text corpus; for tables
    (`is_table_corpus`) a copy whose corpus is their texts, written a document at a time to staging/TASK_CORPUS
    in the lines format, which every reader of a corpus (tokenizer training, instances, permutation streams)
    then takes as it is. The documents are counted against --heldout (and NSP's two per split) here, so that
    the message names the user's table and column, not the staged file; `corpus_name` does so later."""
    if not is_table_corpus(o.corpus, o.text_column):
        return o
    staged, column = staging / TASK_CORPUS, o.text_column or DEFAULT_TEXT_COLUMN
    name = table_corpus_name(o.corpus, column)
    if not write_text_corpus(iter_text_column(o.corpus, column, o.format), staged):
        raise ValueError(f"{', '.join(map(str, o.corpus))}: no text in column {column!r} (every row null or blank)")
    (staging / TASK_CORPUS_SOURCE).write_text(name, encoding="utf-8")
    with naming_the_users_files(staged, name):
        check_corpus_documents([str(staged)], "lines", heldout_value(o.heldout), nsp=_draws_next_sentences(o))
    return replace(o, corpus=[str(staged)], format="lines")
