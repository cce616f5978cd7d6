"""--corpus DIR reads a folder of documents: its files in name order (hidden ones skipped), said on stderr;
a missing path and a directory are told apart; a tokenizer smaller than asked is said, not silent."""

import pytest

from bertology.cli import main
from bertology.io import CorpusError, check_corpus_paths, corpus_files
from bertology.tokenizers import Tokenizer, train

LINES = ["the cat sat on the mat", "a dog ran in the park", "", "birds fly over the sea", "fish swim in it"]


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "docs"
    (d / "b").mkdir(parents=True)
    (d / ".git").mkdir()
    (d / "b" / "z.txt").write_text("\n".join(LINES[3:]) + "\n")
    (d / "a.txt").write_text("\n".join(LINES[:2]) + "\n")
    (d / "c.txt").write_text("more text here\n")
    (d / ".git" / "config").write_text("not a document\n")
    (d / ".notes.txt").write_text("not a document either\n")
    return d


def test_a_folder_is_its_files_in_name_order(folder):
    notes = []
    assert corpus_files([folder, folder / "c.txt"], notes.append) == [
        str(folder / "a.txt"),
        str(folder / "b" / "z.txt"),
        str(folder / "c.txt"),
        str(folder / "c.txt"),
    ]
    assert notes == [f"{folder}: a directory: reading its 3 file(s) in name order (a.txt, b/z.txt, c.txt)"]


def test_missing_and_directory_are_told_apart(folder):
    with pytest.raises(CorpusError, match=r"nothing.txt: no such file"):
        check_corpus_paths([folder / "a.txt", folder / "nothing.txt"])
    with pytest.raises(CorpusError, match=r"docs: a directory, not a file .*corpus_files"):
        check_corpus_paths([folder])


def test_tokenizer_train_on_a_folder_equals_training_on_its_files(folder, tmp_path, capsys):
    assert (
        main(
            [
                "tokenizer",
                "train",
                "--algorithm",
                "wordpiece",
                "--vocab-size",
                "60",
                "--min-frequency",
                "1",
                "--out",
                str(tmp_path / "tok"),
                "--quiet",
                str(folder),
            ]
        )
        == 0
    )
    assert "reading its 3 file(s) in name order (a.txt, b/z.txt, c.txt)" in capsys.readouterr().err
    from_files = train(
        [folder / "a.txt", folder / "b" / "z.txt", folder / "c.txt"],
        algorithm="wordpiece",
        vocab_size=60,
        min_frequency=1,
        show_progress=False,
    )
    assert Tokenizer.load(tmp_path / "tok").get_vocab() == from_files.get_vocab()


def test_a_vocabulary_smaller_than_asked_is_said():
    with pytest.warns(
        UserWarning, match=r"vocab size 5,000: the corpus yields only \d+ unigram tokens .*ask for at most"
    ):
        tok = train(lines=LINES * 5, algorithm="unigram", vocab_size=5000, show_progress=False)
    assert tok.vocab_size < 5000
