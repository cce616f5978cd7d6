"""Corpus reading and word counting: every fast path equals the pipeline's generic path."""
import bz2
import collections
import doctest
import re
from pathlib import Path

import pytest

import bertology.tokenizers.corpus as corpus
from bertology.tokenizers import normalizers, pre_tokenizers
from bertology.tokenizers.corpus import CorpusError, count_words, count_words_in_files, generic_words, iter_lines

DATA = Path(__import__("gensim").__file__).parent / "test" / "test_data"
LEE = DATA / "lee_background.cor"


@pytest.fixture(scope="module")
def mixed_lines():
    """Real English plus the non-ASCII parts of a Wikipedia extract (Greek, accents, CJK, odd spaces)."""
    lines = LEE.read_text(encoding="utf-8").splitlines(keepends=True)[:60]
    with bz2.open(DATA / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2", "rt",
                  encoding="utf-8") as f:
        wiki = [next(f) for _ in range(6000)]
    lines += [line for line in wiki if not line.isascii()][:400]
    lines += ["  leading and trailing  \n", "tab\tsep\x1cfile-sep\x00nul\n", "\u00a0nbsp\u3000ideo",
              "Café naïve 北京大学 ﬁ ½ ῾A\n", "\n", ""]
    return lines


def reference_counts(lines, normalizer, pre_tokenizer):
    c = collections.Counter()
    for line in lines:
        c.update(generic_words(line, normalizer, pre_tokenizer))
    c.pop("", None)
    return dict(c)


PIPELINES = {
    "bert": lambda: (normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()),
    "bert-cased": lambda: (normalizers.BertNormalizer(lowercase=False), pre_tokenizers.BertPreTokenizer()),
    "whitespace-nfkc": lambda: (normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
                                pre_tokenizers.Whitespace()),
    "whitespace-split": lambda: (None, pre_tokenizers.WhitespaceSplit()),
    "bytelevel": lambda: (None, pre_tokenizers.ByteLevel(add_prefix_space=False)),
    "bytelevel-prefix": lambda: (None, pre_tokenizers.ByteLevel(add_prefix_space=True)),
    "metaspace": lambda: (normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
                          pre_tokenizers.Metaspace()),
    "metaspace-never": lambda: (None, pre_tokenizers.Metaspace(prepend_scheme="never")),
    "generic": lambda: (normalizers.Replace("  ", " "), pre_tokenizers.Digits(individual_digits=True)),
}


@pytest.mark.parametrize("name", PIPELINES)
def test_fast_paths_equal_generic_path(name, mixed_lines):
    norm, pre = PIPELINES[name]()
    assert count_words(mixed_lines, norm, pre) == reference_counts(mixed_lines, norm, pre)


def test_counts_known_answer():
    pre = pre_tokenizers.BertPreTokenizer()
    assert count_words(["Hi, hi!\n", "hi"], None, pre) == {"Hi": 1, ",": 1, "hi": 2, "!": 1}
    bl = count_words(["a a\n"], None, pre_tokenizers.ByteLevel(add_prefix_space=False))
    assert bl == {"a": 1, "Ġa": 1, "Ċ": 1}


def test_docstring_examples():
    assert doctest.testmod(corpus).failed == 0


def test_iter_lines_keeps_or_strips_newlines(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"one\ntwo\r\nthree")
    assert list(iter_lines(p)) == ["one\n", "two\r\n", "three"]
    assert list(iter_lines(p, keep_newlines=False)) == ["one", "two", "three"]


def test_undecodable_bytes_name_file_and_offset(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"good line\nok \xff\xfe here\n")
    with pytest.raises(CorpusError, match=re.escape(f"{p}: byte offset 13: invalid UTF-8")):
        list(iter_lines(p))
    assert list(iter_lines(p, errors="replace"))[1] == "ok \ufffd\ufffd here\n"
    with pytest.raises(ValueError, match="errors must be one of"):
        list(iter_lines(p, errors="ignore"))


def test_empty_and_missing_corpus(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="empty corpus: no words in .*empty.txt"):
        count_words_in_files([empty], None, pre_tokenizers.BertPreTokenizer())
    with pytest.raises(CorpusError, match="nope.txt: no such file"):
        count_words_in_files([tmp_path / "nope.txt"])
    with pytest.raises(CorpusError, match="no training files"):
        count_words_in_files([])


@pytest.mark.parametrize("name", ["bert", "bytelevel", "metaspace"])
def test_parallel_count_equals_sequential_order_included(name, tmp_path):
    norm, pre = PIPELINES[name]()
    other = tmp_path / "second.txt"
    other.write_text("Zebra zebra ünïcode\nlast line without newline", encoding="utf-8")
    files = [LEE, other]
    seq = count_words_in_files(files, norm, pre, workers=1)
    par = count_words_in_files(files, norm, pre, workers=2, parallel_min_bytes=0)
    assert list(par.items()) == list(seq.items())


def test_byte_ranges_cover_each_line_once(tmp_path):
    p = tmp_path / "lines.txt"
    p.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    ranges = corpus.byte_ranges([p], 7)
    assert ranges[0][1] == 0 and ranges[-1][2] == p.stat().st_size
    assert all(a[2] == b[1] for a, b in zip(ranges, ranges[1:]))
    lines = [line for _, s, e in ranges for line in iter_lines(p, start=s, end=e)]
    assert lines == list(iter_lines(p))


def test_parallel_decode_error_names_the_absolute_offset(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"ok line\n" * 5000 + b"bad \xff\n" + b"ok line\n" * 10)
    with pytest.raises(CorpusError, match=f"bad.txt: byte offset {8 * 5000 + 4}: invalid UTF-8"):
        count_words_in_files([p], None, pre_tokenizers.BertPreTokenizer(), workers=2, parallel_min_bytes=0)
