"""Every message about a table names the user's own file, and the line or row where one applies: each path that
reads a table (the pretraining corpus of --text-column, the tokenizer / word-vector corpus, a fine-tuning task)
meets a bad row in every format; and the checks a job runs on a table corpus after staging its texts as
task-corpus.txt (--heldout, NSP's two documents per split, a distillation batch, --extend-vocab) name the
table and its column, never the staged file."""

import re
from pathlib import Path

import pytest
import torch

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from bertology.cli import main  # noqa: E402
from bertology.io import corpus_lines  # noqa: E402
from bertology.models import ARCHITECTURES, get_family  # noqa: E402
from bertology.tasks import TASKS  # noqa: E402
from bertology.data.staging import TASK_CORPUS, iter_text_column  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEBIAN = (ROOT / "data" / "debian-sections" / "train.tsv").read_text(encoding="utf-8").splitlines()
ROWS = [dict(zip(("package", "text", "label"), line.split("\t"))) for line in DEBIAN[1::29]]  # 61 rows


def corrupt_parquet(path: Path) -> Path:
    """30 rows in row groups of 10; the page header of the second group's text column overwritten."""
    rows = [{"text": f"Row {i} says something.", "label": "a"} for i in range(30)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=10)
    offset = pq.ParquetFile(path).metadata.row_group(1).column(0).data_page_offset
    data = bytearray(path.read_bytes())
    data[offset : offset + 12] = b"\xff" * 12
    path.write_bytes(bytes(data))
    return path


def truncated_dataset(path: Path) -> Path:
    """A datasets directory of 3 shards × 10 rows whose second shard is cut short in its record batch."""
    datasets = pytest.importorskip("datasets")
    rows = {"text": [f"Row {i} says something." for i in range(30)], "label": ["a"] * 30}
    datasets.Dataset.from_dict(rows).save_to_disk(str(path), num_shards=3)
    shard = sorted(path.glob("data-*.arrow"))[1]
    shard.write_bytes(shard.read_bytes()[:-200])
    return path


# file name → (its content, or a function writing it; the message: file, line or row, what is wrong)
BAD = {
    "unclosed.csv": ('text,label\n"ok one",a\n"unclosed,b\nx,y\n', r":3: malformed CSV"),
    "fields.csv": ("text,label\nok one,a\ntwo,b,c\n", r":3: 3 fields, but the header names 2 columns"),
    "fields.tsv": ("text\tlabel\nok one\ta\ntwo\n", r":3: 1 fields, but the header names 2 columns"),
    "type.jsonl": ('{"text": "ok", "label": "a"}\n{"text": ["a"], "label": "a"}\n', r":2: column 'text' should be"),
    "syntax.jsonl": ('{"text": "ok", "label": "a"}\n{"text": "a"\n', r":2: not valid JSON"),
    "corrupt.parquet": (corrupt_parquet, r": row 10: unreadable Parquet data from this row on"),
    "truncated-ds": (truncated_dataset, r": row 10: unreadable Arrow stream data in .*data-00001-of-00003\.arrow"),
}
TEXT_ONLY = ("csv", "tsv", "jsonl")  # what the tokenizer / word-vector corpus reads as text, not as a table


def bad_table(name: str, tmp_path: Path) -> Path:
    content, _ = BAD[name]
    path = tmp_path / name
    if callable(content):
        return content(path)
    path.write_text(content, encoding="utf-8")
    return path


def assert_names(e: pytest.ExceptionInfo, path: Path, pattern: str) -> None:
    message = str(e.value)
    assert re.search(re.escape(str(path)) + pattern, message), message
    assert TASK_CORPUS not in message


@pytest.mark.parametrize("name", sorted(BAD))
def test_the_pretraining_corpus_of_a_table_names_the_bad_row(name, tmp_path):
    path = bad_table(name, tmp_path)
    with pytest.raises(ValueError) as e:
        list(iter_text_column([str(path)], "text"))
    assert_names(e, path, BAD[name][1])


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_fine_tuning_task_names_the_bad_row(name, tmp_path):
    path = bad_table(name, tmp_path)
    with pytest.raises(ValueError) as e:
        TASKS["classify"]().read(str(path))
    assert_names(e, path, BAD[name][1])


@pytest.mark.parametrize("name", [n for n in sorted(BAD) if not n.endswith(TEXT_ONLY)])
def test_the_tokenizer_and_word_vector_corpus_names_the_bad_row(name, tmp_path):
    path = bad_table(name, tmp_path)
    with pytest.raises(ValueError) as e:
        list(corpus_lines([path]))
    assert_names(e, path, BAD[name][1])


# ---- the checks after staging ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("table-corpus")
    tsv = d / "train.tsv"
    tsv.write_text("package\ttext\tlabel\n" + "".join(f"{r['package']}\t{r['text']}\t{r['label']}\n" for r in ROWS))
    parquet = d / "train.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), parquet, row_group_size=7)
    return {"tsv": tsv, "parquet": parquet}


@pytest.fixture(scope="module")
def teacher(tables, tmp_path_factory):
    """A tiny BERT (MLM head) whose tokenizer is trained on the tables' texts: nothing there is new to it."""
    from bertology.tokenizers import train

    d = tmp_path_factory.mktemp("teacher")
    tok = train(lines=[r["text"] for r in ROWS], family="bert", vocab_size=300, show_progress=False)
    config = get_family("bert").preset("tiny", vocab_size=tok.vocab_size, pad_token_id=tok.token_to_id("[PAD]"))
    torch.manual_seed(0)
    ARCHITECTURES["BertForMaskedLM"](config).save(d)
    tok.save(d / "tokenizer.json")
    return d


def refused(args: list[str], tmp_path: Path, capsys) -> str:
    out = tmp_path / "out"
    assert main([*args, "--steps", "1", "--out", str(out), "--quiet"]) == 2  # (one step, should it run)
    assert not out.exists()  # refused before the first write
    return capsys.readouterr().err


PRETRAIN = ["pretrain", "--family", "bert", "--preset", "tiny", "--vocab-size", "300", "--max-length", "32"]
DISTILL = ["distill", "--student", "bert", "--max-length", "32", "--teacher-precision", "fp32"]  # no bf16 probe


@pytest.mark.parametrize("kind", ["tsv", "parquet"])
def test_corpus_checks_after_staging_name_the_users_table(kind, tables, teacher, tmp_path, capsys):
    table = f"{tables[kind]} (column 'text', a row a document)"
    corpus = ["--corpus", str(tables[kind]), *(["--text-column", "text"] if kind == "tsv" else [])]
    cases = {
        "heldout": (
            [*PRETRAIN, *corpus, "--heldout", "61"],
            f"--heldout 61 sets aside 61 of the 61 documents of {table}, leaving none to train on",
        ),
        "nsp": (
            [*PRETRAIN, *corpus, "--heldout", "1"],
            f"{table} hold 61 document(s): 60 for training and 1 held out",
        ),
        "distill heldout": (
            [*DISTILL, "--teacher", str(teacher), *corpus, "--heldout", "61"],
            f"--heldout 61 sets aside 61 of the 61 documents of {table}",
        ),
        "distill batch": (
            [*DISTILL, "--teacher", str(teacher), *corpus, "--target", "sentence", "--preset", "tiny"]
            + ["--heldout", "2", "--batch-size", "128"],
            f"{table}: 59 training texts, fewer than one batch of 128",
        ),
        "extend-vocab": (
            ["pretrain", "--family", "bert", "--init", str(teacher), *corpus, "--extend-vocab", "5"]
            + ["--vocab-size", "75", "--heldout", "2", "--max-length", "32"],  # a domain tokenizer of letters only
            f"--extend-vocab 5: no piece of the tokenizer trained on {table} is new",
        ),
    }
    for case, (args, expected) in cases.items():
        said = refused(args, tmp_path, capsys)
        assert expected in said, f"{case}: {said}"
        assert TASK_CORPUS not in said, f"{case}: {said}"
