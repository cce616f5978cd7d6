"""A corpus of folders, Parquet files and `datasets` directories (corpus.iter_documents, io.corpus_files): a folder
reads as its corpus files listed one by one (other kinds skipped and said), a table's rows are its documents
(cut by the raw rules, or a sentence a line), Parquet is read a row group at a time, each file keeps its own
token store, and a bad folder or column is refused before the first document."""

import gzip
import sys

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from bertology.cli import main  # noqa: E402
from bertology.data import count_documents, iter_documents  # noqa: E402
from bertology.data.tokenized import tokenize_corpus  # noqa: E402
from bertology.io import CorpusError, corpus_files  # noqa: E402
from bertology.tables import TableError  # noqa: E402

ROWS = [
    "The cat sat on the mat. It slept.\nA new line here.",
    None,  # a null row is skipped, as a blank line is
    "Dr. Smith left at 5 p.m. on Monday.",
    "   ",
    "Birds fly over the sea! Fish swim in it?",
    "One more row.",
    "And the last row. Really.",
]
TEXTS = [r for r in ROWS if r is not None and r.strip()]


def write_parquet(path, texts, row_group_size=2):
    """Several row groups, so a streaming reader crosses their boundaries."""
    numbers = list(range(len(texts)))
    pq.write_table(pa.table({"n": numbers, "text": texts}), path, row_group_size=row_group_size)
    return path


def save_dataset(path, texts):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"text": texts, "n": list(range(len(texts)))}).save_to_disk(str(path), num_shards=2)
    return path


@pytest.fixture
def folder(tmp_path):
    """a.txt, b/c.txt.gz, d.parquet, e/ (a datasets directory), beside a README, a JSON file and hidden ones."""
    d = tmp_path / "corpus"
    (d / "b").mkdir(parents=True)
    (d / "a.txt").write_text("the cat sat\non the mat\n\na dog ran\n", encoding="utf-8")
    with gzip.open(d / "b" / "c.txt.gz", "wt", encoding="utf-8") as f:
        f.write("birds fly\n\nfish swim\nin the sea\n")
    write_parquet(d / "d.parquet", ROWS)
    save_dataset(d / "e", ["A saved row. Two sentences.", "Another saved row."])
    (d / "README.md").write_text("not a document\n")
    (d / "b" / "meta.json").write_text("{}\n")
    (d / ".hidden.txt").write_text("not read\n")
    return d


def test_a_folder_reads_as_its_corpus_files_listed_one_by_one(folder):
    notes = []
    files = corpus_files([folder], notes.append)
    assert files == [str(folder / n) for n in ("a.txt", "b/c.txt.gz", "d.parquet", "e")]
    assert notes == [
        f"{folder}: a directory: reading its 4 file(s) in name order (a.txt, b/c.txt.gz, d.parquet, e); "
        "skipped 2 file(s) of other kinds (.json, .md)"
    ]
    one_by_one = [doc for f in files for doc in iter_documents([f], "raw")]
    assert list(iter_documents(files, "raw")) == one_by_one
    assert one_by_one == [
        ["the cat sat on the mat"],
        ["a dog ran"],
        ["birds fly"],
        ["fish swim in the sea"],
        ["The cat sat on the mat.", "It slept.", "A new line here."],
        ["Dr. Smith left at 5 p.m. on Monday."],
        ["Birds fly over the sea!", "Fish swim in it?"],
        ["One more row."],
        ["And the last row.", "Really."],
        ["A saved row.", "Two sentences."],
        ["Another saved row."],
    ]
    for format in ("lines", "raw"):
        assert count_documents(files, format) == len(list(iter_documents(files, format))) == 11


def test_a_rows_lines_are_its_sentences_in_the_lines_format(tmp_path):
    path = write_parquet(tmp_path / "t.parquet", ROWS)
    assert list(iter_documents(path, "lines")) == [
        ["The cat sat on the mat. It slept.", "A new line here."],
        ["Dr. Smith left at 5 p.m. on Monday."],
        ["Birds fly over the sea! Fish swim in it?"],
        ["One more row."],
        ["And the last row. Really."],
    ]


def test_a_datasets_directory_gives_its_rows_as_documents(tmp_path):
    path = save_dataset(tmp_path / "ds", TEXTS)
    assert corpus_files([path]) == [str(path)]  # one source, not a folder of Arrow shards
    assert list(iter_documents(path, "lines")) == list(iter_documents(write_parquet(tmp_path / "t.pq", TEXTS), "lines"))
    assert count_documents(path) == len(TEXTS)


def test_parquet_is_read_a_row_group_at_a_time_and_only_its_text_column(tmp_path, monkeypatch):
    path = write_parquet(tmp_path / "t.parquet", ROWS, row_group_size=2)  # 4 row groups
    calls = []
    real = pq.ParquetFile.iter_batches

    def iter_batches(self, *args, **kwargs):
        calls.append((kwargs.get("row_groups"), kwargs.get("columns")))
        return real(self, *args, **kwargs)

    def whole_table(*args, **kwargs):
        raise AssertionError("the whole table was read")

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", iter_batches)
    monkeypatch.setattr(pq.ParquetFile, "read", whole_table)
    monkeypatch.setattr(pq, "read_table", whole_table)
    docs = iter_documents(path, "raw")
    assert next(docs) == ["The cat sat on the mat.", "It slept.", "A new line here."]
    assert calls == [([0], ["text"])]  # the first document needed the first group alone
    assert next(docs) == ["Dr. Smith left at 5 p.m. on Monday."]  # row 2: the second group
    assert calls == [([0], ["text"]), ([1], ["text"])]
    assert len(list(docs)) == 3 and [groups for groups, _ in calls] == [[0], [1], [2], [3]]


def test_adding_a_file_to_the_folder_tokenizes_only_that_file(folder, wordpiece, tmp_path, counted_builds):
    built = counted_builds
    first = tokenize_corpus(corpus_files([folder]), wordpiece, tmp_path / "cache", workers=1)
    assert built == corpus_files([folder]) and first.num_documents == count_documents(corpus_files([folder])) == 11
    write_parquet(folder / "b" / "added.parquet", ["An added row. It has two sentences."])
    built.clear()
    grown = tokenize_corpus(corpus_files([folder]), wordpiece, tmp_path / "cache", workers=1)
    assert built == [str(folder / "b" / "added.parquet")]  # every other file's store is reused
    assert grown.num_documents == 12
    assert [d.name.rsplit("-", 1)[0] for d in grown.dirs if d not in first.dirs] == ["added.parquet"]
    # a dataset saved again over its directory is a new store, though the directory itself is the same
    save_dataset(folder / "e", ["A saved row. Changed.", "Another saved row."])
    built.clear()
    tokenize_corpus(corpus_files([folder]), wordpiece, tmp_path / "cache", workers=1)
    assert built == [str(folder / "e")]


def test_a_folder_with_no_corpus_file_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match=r"empty: a directory with no files in it"):
        corpus_files([tmp_path / "empty"])
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("hello\n")
    (tmp_path / "notes" / "LICENSE").write_text("hello\n")
    with pytest.raises(
        CorpusError,
        match=r"notes: a directory with no corpus file in it \(text: .txt, .text, .raw, maybe .gz / .xz / .bz2; "
        r".parquet, .pq; a datasets directory\); skipped 2 file\(s\) of other kinds \(\(no suffix\), .md\)",
    ):
        corpus_files([tmp_path / "notes"])


def test_a_missing_or_non_text_column_is_named_before_the_first_document(tmp_path):
    text = tmp_path / "first.txt"
    text.write_text("read first\n")
    table = write_parquet(tmp_path / "t.parquet", TEXTS)
    with pytest.raises(
        TableError, match=r"t.parquet: no column 'body' \(the text column\); columns present: 'n', 'text'"
    ):
        next(iter_documents([text, table], text_column="body"))  # the text file before it is not read yet
    with pytest.raises(
        TableError, match=r"t.parquet: column 'n' \(the text column\) holds int64, not text; text columns: 'text'"
    ):
        count_documents([text, table], text_column="n")
    dataset = save_dataset(tmp_path / "ds", TEXTS)
    with pytest.raises(TableError, match=r"ds: no column 'body' .*columns present: 'text', 'n'"):
        next(iter_documents([dataset], text_column="body"))


def test_without_pyarrow_a_parquet_corpus_names_the_extra(tmp_path, monkeypatch):
    table = write_parquet(tmp_path / "t.parquet", TEXTS)
    for name in ("pyarrow", "pyarrow.parquet", "pyarrow.ipc"):
        monkeypatch.setitem(sys.modules, name, None)  # `import pyarrow` now raises ImportError
    with pytest.raises(
        TableError, match=r"t.parquet: a Parquet file; reading it needs pyarrow: .*bertology\[formats\]"
    ):
        next(iter_documents([table]))


def test_tokenizer_train_says_what_it_skipped(folder, tmp_path, capsys):
    args = ["tokenizer", "train", "--algorithm", "wordpiece", "--vocab-size", "60", "--min-frequency", "1"]
    assert main([*args, "--out", str(tmp_path / "tok"), "--quiet", str(folder)]) == 0
    assert "skipped 2 file(s) of other kinds (.json, .md)" in capsys.readouterr().err


def test_a_folder_of_text_beside_tables_is_staged_for_pretraining_as_each_reads(folder):
    """pretrain and distill stage a corpus with tables into one text copy: the text files in it keep --format's
    reading (here lines), the tables' rows are cut by the raw rules, in the folder's order."""
    from bertology.data.staging import iter_text_column

    files = corpus_files([folder])
    staged = list(iter_text_column(files, "text", "lines"))
    assert staged[:4] == [["the cat sat", "on the mat"], ["a dog ran"], ["birds fly"], ["fish swim", "in the sea"]]
    assert staged[4:] == [doc for f in files[2:] for doc in iter_documents([f], "raw")]
