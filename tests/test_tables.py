"""Parquet files and `datasets` directories (save_to_disk) read as the TSV / JSON-lines files they hold would be:
the same texts, labels and corpus documents (ClassLabel ids as their names), streamed across row groups and
shards; a missing or non-text column, a DatasetDict root and a missing pyarrow refused, naming the culprit."""

import json
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from bertology import tables  # noqa: E402
from bertology.cli import main  # noqa: E402
from bertology.io import CorpusError, check_corpus_paths, corpus_files, corpus_lines  # noqa: E402
from bertology.tasks import TASKS  # noqa: E402
from bertology.data.staging import iter_text_column  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "tasks" / "fixtures"
DEBIAN = (ROOT / "data" / "debian-sections" / "train.tsv").read_text(encoding="utf-8").splitlines()
HEADER = DEBIAN[0].split("\t")  # package, text, label
ROWS = [dict(zip(HEADER, line.split("\t"))) for line in DEBIAN[1::29]]  # 61 rows, every section
NAMES = sorted({r["label"] for r in ROWS})


def write_tsv(path, rows):
    path.write_text(
        "\n".join(["\t".join(HEADER)] + ["\t".join(r[c] for c in HEADER) for r in rows]) + "\n", encoding="utf-8"
    )
    return path


def write_parquet(path, rows, row_group_size=7):
    """Several row groups, so a reader that streams batches crosses their boundaries."""
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def save_dataset(path, rows, num_shards=3):
    """The real `datasets` library's save_to_disk, the label a ClassLabel (stored as ids), in several shards."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {
            "package": datasets.Value("string"),
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=NAMES),
        }
    )
    columns = {c: [r[c] for r in rows] for c in ("package", "text")}
    ds = datasets.Dataset.from_dict({**columns, "label": [NAMES.index(r["label"]) for r in rows]}, features=features)
    ds.save_to_disk(str(path), num_shards=num_shards)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    return {
        "tsv": write_tsv(d / "train.tsv", ROWS),
        "parquet": write_parquet(d / "train.parquet", ROWS),
        "dataset": save_dataset(d / "train-ds", ROWS),
    }


@pytest.fixture(scope="module")
def tokenizer_file(files):
    from bertology.tokenizers import train

    path = files["tsv"].parent / "tokenizer.json"
    train(lines=[r["text"] for r in ROWS], family="bert", vocab_size=300, show_progress=False).save(path)
    return path


def examples(task, path, **columns):
    return [(e.text, e.pair, e.label, e.id) for e in TASKS[task]().read(str(path), **columns)]


@pytest.mark.parametrize("kind", ["parquet", "dataset"])
def test_a_labelled_table_reads_as_its_tsv(files, kind, monkeypatch):
    monkeypatch.setattr(tables, "BATCH_ROWS", 5)  # batches smaller than the row groups and shards
    expect = examples("classify", files["tsv"])
    assert examples("classify", files[kind]) == expect and len(expect) == len(ROWS)
    assert examples("pair", files[kind], pair_column="package") == examples("pair", files["tsv"], pair_column="package")
    first = TASKS["classify"]().read(str(files[kind]))[3]
    assert first.where == f"{files[kind]}: row 3"  # the row as datasets indexes it


def test_classlabel_names_come_from_the_saved_features(files, tmp_path):
    source = tables.open_table(files["dataset"])
    assert source.types["label"] == "int64" and source.labels["label"] == (NAMES, False)
    assert [row["label"] for _, row in source.records(["label"])] == [r["label"] for r in ROWS]
    assert list(source.values("label")) == [r["label"] for r in ROWS]
    assert len(source.files) == 3 and all(f.endswith(".arrow") for f in source.files)
    # a Parquet file datasets wrote carries its features in the schema's metadata: the names again
    datasets = pytest.importorskip("datasets")
    datasets.load_from_disk(str(files["dataset"])).to_parquet(str(tmp_path / "exported.parquet"))
    assert examples("classify", tmp_path / "exported.parquet") == examples("classify", files["tsv"])


@pytest.mark.parametrize("kind", ["parquet", "dataset"])
def test_a_table_corpus_reads_as_its_tsv(files, kind):
    """A row is a document (cut into sentences as --format raw cuts one), as --text-column reads a TSV."""
    expect = list(iter_text_column([str(files["tsv"])], "text"))
    assert list(iter_text_column([str(files[kind])], "text")) == expect and len(expect) == len(ROWS)
    assert list(corpus_lines([files[kind]])) == [r["text"] + "\n" for r in ROWS]


def test_blank_and_null_rows_of_a_corpus_are_skipped_as_blank_lines(tmp_path):
    path = write_parquet(
        tmp_path / "c.parquet", [{"text": "One. Two."}, {"text": None}, {"text": "  "}, {"text": "Three\nfour"}]
    )
    assert list(iter_text_column([str(path)], "text")) == [["One.", "Two."], ["Three four"]]
    assert list(tables.table_lines(path, "text")) == ["One. Two.\n", "Three\n", "four\n"]


def test_tagging_and_choice_from_tables(tmp_path):
    datasets = pytest.importorskip("datasets")
    tags = ["O", "B-PER", "I-PER", "B-LOC"]
    sentences = [
        (["Angela", "Merkel", "visited", "Paris", "."], ["B-PER", "I-PER", "O", "B-LOC", "O"]),
        (["Hello", "there"], ["O", "O"]),
    ]
    jsonl = tmp_path / "ner.jsonl"
    jsonl.write_text("".join(json.dumps({"tokens": w, "tags": t}) + "\n" for w, t in sentences), encoding="utf-8")
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "tags": datasets.Sequence(datasets.ClassLabel(names=tags)),
        }
    )
    datasets.Dataset.from_dict(
        {"tokens": [w for w, _ in sentences], "tags": [[tags.index(x) for x in t] for _, t in sentences]},
        features=features,
    ).save_to_disk(str(tmp_path / "ner-ds"))
    assert examples("tag", tmp_path / "ner-ds") == examples("tag", jsonl)

    rows = [json.loads(line) for line in (FIXTURES / "choice.jsonl").read_text(encoding="utf-8").splitlines() if line]
    parquet = write_parquet(tmp_path / "choice.parquet", rows, row_group_size=1)  # a key some rows lack: null there
    assert examples("choice", parquet) == examples("choice", FIXTURES / "choice.jsonl")


def test_a_directory_of_a_dataset_is_one_source_not_a_folder_of_files(files, tmp_path):
    assert corpus_files([files["dataset"]]) == [str(files["dataset"])]
    with pytest.raises(CorpusError, match=r"train.parquet: a table .*--text-column"):
        check_corpus_paths([files["parquet"]])  # read as text it would be Parquet's bytes


def test_tokenizer_and_word_vectors_read_a_table_as_its_text(files, tmp_path):
    from bertology.wordvec.corpus import LineSentences

    text = tmp_path / "texts.txt"
    text.write_text("".join(r["text"] + "\n" for r in ROWS), encoding="utf-8")
    for source, out in ((text, "from-text"), (files["dataset"], "from-dataset"), (files["parquet"], "from-parquet")):
        assert (
            main(
                [
                    "tokenizer",
                    "train",
                    "--family",
                    "bert",
                    "--vocab-size",
                    "300",
                    "--quiet",
                    "--out",
                    str(tmp_path / out),
                    str(source),
                ]
            )
            == 0
        )
    trained = {
        out: (tmp_path / out / "tokenizer.json").read_text() for out in ("from-text", "from-dataset", "from-parquet")
    }
    assert trained["from-dataset"] == trained["from-text"] == trained["from-parquet"]
    assert list(LineSentences([files["parquet"]])) == list(LineSentences([text]))


# ---- jobs ---------------------------------------------------------------------------------------------


def test_finetune_from_a_dataset_and_parquet_is_the_run_from_the_tsv(files, tokenizer_file, tmp_path):
    """The same examples in the same order: the same weights, bit for bit."""
    import bertology
    import torch

    common = [
        "--model",
        "bert-tiny",
        "--tokenizer",
        str(tokenizer_file),
        "--task",
        "classify",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--max-length",
        "64",
        "--quiet",
        "--seed",
        "0",
    ]
    for name, train, dev in (("tsv", files["tsv"], files["tsv"]), ("tables", files["dataset"], files["parquet"])):
        assert main(["finetune", *common, "--train", str(train), "--dev", str(dev), "--out", str(tmp_path / name)]) == 0
    ours, theirs = bertology.load(tmp_path / "tables"), bertology.load(tmp_path / "tsv")
    assert ours.config.id2label == theirs.config.id2label
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()))
    assert main(["evaluate", "--model", str(tmp_path / "tables"), "--data", str(files["dataset"])]) == 0


def test_pretrain_and_distill_from_tables_are_the_runs_from_the_tsv_texts(files, tmp_path):
    """pretrain / distill --corpus x.parquet or a datasets directory (the "text" column) train as --corpus x.tsv
    --text-column text does, weight for weight."""
    common = [
        "pretrain",
        "--family",
        "bert",
        "--preset",
        "tiny",
        "--vocab-size",
        "300",
        "--steps",
        "2",
        "--batch-size",
        "4",
        "--max-length",
        "32",
        "--heldout",
        "2",
        "--dupe-factor",
        "1",
        "--quiet",
    ]
    assert main([*common, "--corpus", str(files["parquet"]), "--out", str(tmp_path / "parquet")]) == 0
    assert main([*common, "--corpus", str(files["dataset"]), "--out", str(tmp_path / "dataset")]) == 0
    assert main([*common, "--corpus", str(files["tsv"]), "--text-column", "text", "--out", str(tmp_path / "tsv")]) == 0
    import bertology
    import torch

    weights = {n: bertology.load(tmp_path / n).state_dict() for n in ("parquet", "dataset", "tsv")}
    for name in ("parquet", "dataset"):
        assert all(torch.equal(weights[name][k], v) for k, v in weights["tsv"].items())
    assert (tmp_path / "parquet" / "task-corpus.txt").read_text() == (tmp_path / "tsv" / "task-corpus.txt").read_text()

    # distil that model into a student, from the datasets directory and from the TSV's text column: the same student
    common = [
        "distill",
        "--teacher",
        str(tmp_path / "tsv"),
        "--student",
        "bert",
        "--depth",
        "1",
        "--steps",
        "2",
        "--batch-size",
        "4",
        "--max-length",
        "32",
        "--heldout",
        "2",
        "--quiet",
    ]
    assert main([*common, "--corpus", str(files["dataset"]), "--out", str(tmp_path / "student-ds")]) == 0
    assert (
        main([*common, "--corpus", str(files["tsv"]), "--text-column", "text", "--out", str(tmp_path / "student")]) == 0
    )
    # and a run from the dataset stopped after its first step resumes to the same student (its corpus staged again)
    split = [*common, "--corpus", str(files["dataset"]), "--out", str(tmp_path / "split"), "--save-every", "1"]
    assert main([*split, "--stop-at", "1"]) == 130
    assert main([*split, "--resume"]) == 0
    students = [bertology.load(tmp_path / n).state_dict() for n in ("student-ds", "student", "split")]
    assert all(torch.equal(other[k], v) for other in students[1:] for k, v in students[0].items())


# ---- refused, naming the culprit -------------------------------------------------------------------


def test_a_missing_or_non_text_column_names_it_and_lists_the_columns(files):
    with pytest.raises(
        ValueError,
        match=r"train.parquet: no column 'body' \(the text_column\); columns present: "
        r"'package', 'text', 'label'",
    ):
        TASKS["classify"]().read(str(files["parquet"]), text_column="body")
    with pytest.raises(
        ValueError,
        match=r"train-ds: column 'label' \(the text_column\) does not hold text; "
        r"text columns: 'package', 'text'",
    ):
        TASKS["classify"]().read(str(files["dataset"]), text_column="label")
    with pytest.raises(
        ValueError,
        match=r"column 'label' \(the text column\) holds int64, not text; text columns: "
        r"'package', 'text'",
    ):
        list(tables.iter_texts(files["dataset"], "label"))
    with pytest.raises(ValueError, match=r"no column 'body'.*'package', 'text', 'label'"):
        list(iter_text_column([str(files["parquet"])], "body"))


def test_a_dataset_dict_asks_for_one_split(tmp_path):
    datasets = pytest.importorskip("datasets")
    splits = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": ["a b", "c d"], "label": ["x", "y"]}),
            "test": datasets.Dataset.from_dict({"text": ["e f"], "label": ["x"]}),
        }
    )
    splits.save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(ValueError, match=r"dd: a DatasetDict .*give one split's directory, e.g. .*dd/train, .*dd/test"):
        TASKS["classify"]().read(str(tmp_path / "dd"))
    assert [e.text for e in TASKS["classify"]().read(str(tmp_path / "dd" / "train"))] == ["a b", "c d"]


def test_without_pyarrow_a_table_fails_with_the_install_line_and_nothing_is_written(
    files, tokenizer_file, tmp_path, monkeypatch, capsys
):
    for name in ("pyarrow", "pyarrow.parquet", "pyarrow.ipc"):
        monkeypatch.setitem(sys.modules, name, None)  # `import pyarrow` now raises ImportError
    with pytest.raises(
        tables.TableError,
        match=r"train.parquet: a Parquet file; reading it needs pyarrow: "
        r"pip install 'bertology\[formats\]'",
    ):
        TASKS["classify"]().read(str(files["parquet"]))
    out = tmp_path / "out"
    assert (
        main(
            [
                "finetune",
                "--model",
                "bert-tiny",
                "--tokenizer",
                str(tokenizer_file),
                "--task",
                "classify",
                "--train",
                str(files["dataset"]),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 2
    )
    assert "train-ds: a datasets directory (Arrow files); reading it needs pyarrow" in capsys.readouterr().err
    assert (
        main(
            [
                "pretrain",
                "--family",
                "bert",
                "--preset",
                "tiny",
                "--corpus",
                str(files["parquet"]),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 2
    )
    assert "train.parquet: a Parquet file; reading it needs pyarrow: pip install" in capsys.readouterr().err
    assert not out.exists()
    # a text corpus does not need it
    assert list(iter_text_column([str(files["tsv"])], "text"))[0] == [ROWS[0]["text"]]
