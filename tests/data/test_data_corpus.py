"""Corpus reading: the lines format's edge cases, raw text with the sentence splitter, errors."""

import bz2
import gzip
import lzma
import re
from pathlib import Path

import pytest

from bertology.data import iter_documents, split_sentences
from bertology.tokenizers.corpus import CorpusError

WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"


def test_lines_format_edge_cases(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("\n\n  \nA one.\nA two.\n\n\n\t\nB only.\n\nC one.\n  C two.  \n\n\n")
    assert list(iter_documents(p)) == [["A one.", "A two."], ["B only."], ["C one.", "C two."]]


def test_end_of_file_ends_a_document(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("a1.\na2.")  # no final newline, no blank line
    b.write_text("b1.\n")
    assert list(iter_documents([a, b])) == [["a1.", "a2."], ["b1."]]


def test_raw_format_splits_sentences(tmp_path):
    p = tmp_path / "raw.txt"
    p.write_text("Mr. Smith went to\nWashington. He arrived at 3 p.m. on\nFriday!\n\nNew document? Yes.\n")
    assert list(iter_documents(p, format="raw")) == [
        ["Mr. Smith went to Washington.", "He arrived at 3 p.m. on Friday!"],
        ["New document?", "Yes."],
    ]


@pytest.mark.parametrize(
    "text, sentences",
    [
        ("It works. It really works.", ["It works.", "It really works."]),
        ("J. R. R. Tolkien wrote it. Then he slept.", ["J. R. R. Tolkien wrote it.", "Then he slept."]),
        ('The U.S. Army moved. "Go!" he said.', ["The U.S. Army moved.", '"Go!" he said.']),
        (
            "See e.g. this one. And (that one.) Also 1999 was a year. 2000 too.",
            ["See e.g. this one.", "And (that one.)", "Also 1999 was a year.", "2000 too."],
        ),
        ("Wait... What?! Fine.", ["Wait...", "What?!", "Fine."]),
        ("no final stop", ["no final stop"]),
        ("   ", []),
    ],
)
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


def test_shipped_corpus_is_in_lines_format():
    docs = list(iter_documents(WIKI))
    assert len(docs) == 98
    assert sum(len(d) for d in docs) == 17456
    assert docs[0][0].startswith("Anarchism is a political philosophy")
    assert WIKI.stat().st_size <= 3_000_000
    # markup is gone
    text = WIKI.read_text(encoding="utf-8")
    for mark in ("[[", "]]", "{{", "}}", "<ref", "'''", "==", "&nbsp;"):
        assert mark not in text, mark


def test_errors_name_the_file(tmp_path):
    with pytest.raises(CorpusError, match="nothere.txt"):
        list(iter_documents([tmp_path / "nothere.txt"]))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    with pytest.raises(CorpusError, match=r"bad.txt: byte offset 5"):
        list(iter_documents(bad))
    assert list(iter_documents(bad, errors="replace")) == [["fine", "\ufffd\ufffd broken"]]
    with pytest.raises(ValueError, match="format"):
        list(iter_documents(bad, format="xml"))
    with pytest.raises(CorpusError, match="no corpus files"):
        list(iter_documents([]))


@pytest.mark.parametrize("format", ["lines", "raw"])
def test_compressed_corpus_gives_the_same_documents(tmp_path, small_corpus, format):
    data = small_corpus.read_bytes()
    plain = list(iter_documents(small_corpus, format))
    assert len(plain) == 8
    for ext, compress in [(".gz", gzip.compress), (".xz", lzma.compress), (".bz2", bz2.compress)]:
        p = tmp_path / ("small.txt" + ext)
        p.write_bytes(compress(data))
        assert list(iter_documents(p, format)) == plain, ext
        assert list(iter_documents([p, small_corpus], format)) == plain + plain, ext


def test_compressed_corpus_errors_name_the_file(tmp_path):
    cut = tmp_path / "cut.txt.xz"
    cut.write_bytes(lzma.compress(WIKI.read_bytes()[:200_000])[:-100])
    with pytest.raises(CorpusError, match=re.escape(f"{cut}: corrupt or truncated xz stream")):
        list(iter_documents(cut))
    bad = tmp_path / "bad.txt.gz"
    bad.write_bytes(gzip.compress(b"fine\n\n\xff\xfe broken\n"))
    with pytest.raises(CorpusError, match=re.escape(f"{bad}: decompressed byte offset 6: invalid UTF-8")):
        list(iter_documents(bad))
    assert list(iter_documents(bad, errors="replace")) == [["fine"], ["\ufffd\ufffd broken"]]


@pytest.mark.parametrize("block", [1, 2, 7, 1 << 24])
def test_count_documents_counts_what_iter_documents_yields(tmp_path, monkeypatch, block):
    """count_documents counts runs of non-blank lines a block at a time: the same count as
    iter_documents in both formats, whatever the block (a line or a multi-byte char cut across two),
    with Unicode whitespace, \\r\\n, blank lines at either end, and across files."""
    from bertology.data import corpus

    monkeypatch.setattr(corpus, "_COUNT_BLOCK", block)
    text = (
        "\n\n  \na\r\nb\n\u3000\n\x1c\nc é.\n \tindented\n\n\nDoc. Two\n\u00a0\nd e. F g.\n\x85\n\u00e9"
        + "x" * 30
        + "\n \t"
    )
    p = tmp_path / "tricky.txt"
    p.write_text(text, encoding="utf-8")
    q = tmp_path / "plain.txt.gz"
    q.write_bytes(gzip.compress(b"one\ntwo\n\nthree"))
    for fmt in ("lines", "raw"):
        for files in ([p], [q], [p, q, p], [WIKI]):
            if files == [WIKI] and block < 1 << 24:
                continue  # (a byte a read: too slow for 3 MB)
            assert corpus.count_documents(files, fmt) == sum(1 for _ in iter_documents(files, fmt)) > 0
    assert corpus.count_documents([p]) == 5  # a b | c é. | Doc. Two | d e. F g. | éx…
    assert corpus.blank_lines(b"").tolist() == []


def test_count_documents_raises_iter_documents_errors(tmp_path):
    from bertology.data import count_documents

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\n" * 1000 + b"\xff\xfe broken\n")
    with pytest.raises(CorpusError, match=r"bad.txt: byte offset 6000: invalid UTF-8"):
        count_documents([bad])
    assert count_documents([bad], errors="replace") == 1001
    cut = tmp_path / "cut.txt.xz"
    cut.write_bytes(lzma.compress(WIKI.read_bytes()[:200_000])[:-100])
    with pytest.raises(CorpusError, match=re.escape(f"{cut}: corrupt or truncated xz stream")):
        count_documents([cut])
    with pytest.raises(ValueError, match="format"):
        count_documents([bad], format="xml")
