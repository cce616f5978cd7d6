"""`bertology wordvec …` end to end through the CLI's one error boundary."""

import subprocess
import sys

import pytest

from bertology.cli import main
from bertology.wordvec.vectors import KeyedVectors


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, test_data):
    path = tmp_path_factory.mktemp("cli") / "lee.txt"
    path.write_bytes((test_data / "lee_background.cor").read_bytes())
    return path


@pytest.mark.integration
@pytest.mark.parametrize(
    "algorithm,extra", [("skipgram", []), ("cbow", ["--hs", "--negative", "0"]), ("glove", ["--epochs", "3"])]
)
def test_train_then_eval_similar_plot(tmp_path, corpus, capsys, algorithm, extra):
    out = tmp_path / "vectors.bin"
    assert (
        main(
            [
                "wordvec",
                "train",
                "--algorithm",
                algorithm,
                "--lowercase",
                "--workers",
                "2",
                "--vector-size",
                "20",
                "--quiet",
                "--out",
                str(out),
                *extra,
                str(corpus),
            ]
        )
        == 0
    )
    kv = KeyedVectors.load(out)
    assert kv.vector_size == 20 and len(kv) == 1723  # gensim's vocabulary of this corpus at min_count 5
    assert main(["wordvec", "eval", str(out)]) == 0
    text = capsys.readouterr().out
    assert "analogies questions-words.txt" in text and "pairs wordsim353.tsv: Spearman" in text
    assert main(["wordvec", "similar", str(out), "government", "--topn", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(float(line.split("\t")[0]) <= 1.0001 for line in lines)
    png = tmp_path / "pairs.png"
    assert (
        main(
            [
                "wordvec",
                "plot",
                str(out),
                "--out",
                str(png),
                "--pairs",
                "australia:sydney,police:government,afghanistan:kabul,us:washington",
            ]
        )
        == 0
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def train_to(d, *args: str) -> list[str]:
    """`wordvec train ARGS` with the --out it requires."""
    return ["train", "--out", str(d / "v.txt"), *args]


@pytest.mark.parametrize(
    "make_args,message",
    [
        (lambda d: train_to(d, write(d / "empty.txt", b"\n\n")), "empty.txt: the corpus has no words"),
        (
            lambda d: train_to(d, write(d / "rare.txt", b"a b c\nd e f\n")),
            "rare.txt: no word occurs --min-count 5 times",
        ),
        (
            lambda d: train_to(d, write(d / "latin1.txt", b"ok words\ncaf\xe9 au lait\n")),
            "latin1.txt: line 2: invalid UTF-8",
        ),
        (lambda d: train_to(d, "--window", "0", write(d / "x.txt", b"a\n")), "--window 0: must be ≥ 1"),
        (lambda d: train_to(d, "--negative", "0", write(d / "x.txt", b"a\n")), "--negative 0 without --hs"),
        (lambda d: train_to(d, str(d / "missing.txt")), "missing.txt: no such file"),
        (
            lambda d: ["eval", write(d / "bad.txt", b"2 3\nx 1 2 3\ny 1 2\n")],
            "bad.txt: line 3: 2 numbers after the word",
        ),
        (
            lambda d: ["similar", write(d / "v.txt", b"1 2\nx 1 2\n"), "nothere"],
            "word 'nothere' is not in the vocabulary",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_culprit(tmp_path, capsys, make_args, message):
    assert main(["wordvec", *make_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_nothing_written_when_training_fails(tmp_path):
    out = tmp_path / "v.txt"
    assert main(["wordvec", "train", "--out", str(out), write(tmp_path / "rare.txt", b"a b\n")]) == 2
    assert list(tmp_path.iterdir()) == [tmp_path / "rare.txt"]


def test_the_cli_module_imports_nothing_heavy():
    code = (
        "import sys, bertology.wordvec.cli; "
        "print(sorted(m for m in ('torch', 'numba', 'matplotlib') if m in sys.modules))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    )


def test_train_without_out_is_refused_before_reading_the_corpus(tmp_path, capsys):
    """Minutes of training with nowhere to write the vectors would be lost: --out is required."""
    corpus = write(tmp_path / "corpus.txt", b"a b c\n")
    with pytest.raises(SystemExit) as refused:
        main(["wordvec", "train", corpus])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "the following arguments are required: --out" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "corpus.txt"]
