"""Corpus reading and word counting: every fast path equals the pipeline's generic path."""

import bz2
import gzip
import lzma
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
    with bz2.open(
        DATA / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2", "rt", encoding="utf-8"
    ) as f:
        wiki = [next(f) for _ in range(6000)]
    lines += [line for line in wiki if not line.isascii()][:400]
    lines += [
        "  leading and trailing  \n",
        "tab\tsep\x1cfile-sep\x00nul\n",
        "\u00a0nbsp\u3000ideo",
        "Café naïve 北京大学 ﬁ ½ ῾A\n",
        "\n",
        "",
    ]
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
    "whitespace-nfkc": lambda: (
        normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
        pre_tokenizers.Whitespace(),
    ),
    "whitespace-split": lambda: (None, pre_tokenizers.WhitespaceSplit()),
    "bytelevel": lambda: (None, pre_tokenizers.ByteLevel(add_prefix_space=False)),
    "bytelevel-prefix": lambda: (None, pre_tokenizers.ByteLevel(add_prefix_space=True)),
    "metaspace": lambda: (
        normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
        pre_tokenizers.Metaspace(),
    ),
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


COMPRESSORS = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}


def write_all_forms(tmp_path, data: bytes, stem: str = "corpus.txt") -> dict[str, Path]:
    """The same bytes as a plain file and as .gz / .xz / .bz2 files."""
    forms = {"": tmp_path / stem}
    forms[""].write_bytes(data)
    for ext, compress in COMPRESSORS.items():
        forms[ext] = tmp_path / (stem + ext)
        forms[ext].write_bytes(compress(data))
    return forms


def test_compression_is_chosen_by_extension_only(tmp_path):
    assert [corpus.compression(n) for n in ("a.gz", "a.txt.XZ", "a.bz2", "a.txt", "gz")] == [
        "gzip",
        "xz",
        "bz2",
        None,
        None,
    ]
    p = tmp_path / "looks-gzipped.txt"  # gzip bytes under a plain name are read as they are
    p.write_bytes(gzip.compress(b"hello\n"))
    assert next(iter_lines(p, errors="replace")).startswith("\x1f\ufffd")  # the gzip magic, undecoded


def test_compressed_corpus_reads_and_trains_like_plain(tmp_path, mixed_lines):
    data = LEE.read_bytes()[:150_000] + "".join(mixed_lines).encode("utf-8")
    forms = write_all_forms(tmp_path, data)
    assert all(forms[ext].stat().st_size < len(data) // 2 for ext in COMPRESSORS)  # really compressed
    plain_lines = list(iter_lines(forms[""]))
    assert "".join(plain_lines).encode("utf-8") == data
    norm, pre = PIPELINES["bert"]()
    counts = count_words_in_files([forms[""]], norm, pre, workers=1)
    from bertology.tokenizers import train

    tok = train(files=[forms[""]], family="bert", vocab_size=400, show_progress=False).to_str()
    for ext in COMPRESSORS:
        assert list(iter_lines(forms[ext])) == plain_lines, ext
        assert list(iter_lines(forms[ext], keep_newlines=False)) == list(iter_lines(forms[""], keep_newlines=False))
        assert list(count_words_in_files([forms[ext]], norm, pre, workers=1).items()) == list(counts.items())
        # parallel: a compressed file is one range, next to a plain file cut into several
        par = count_words_in_files([forms[ext], LEE], norm, pre, workers=2, parallel_min_bytes=0)
        assert list(par.items()) == list(count_words_in_files([forms[""], LEE], norm, pre, workers=1).items())
        assert train(files=[forms[ext]], family="bert", vocab_size=400, show_progress=False).to_str() == tok, ext


def test_byte_ranges_keep_a_compressed_file_whole(tmp_path):
    forms = write_all_forms(tmp_path, b"".join(b"line %d\n" % i for i in range(1000)))
    ranges = corpus.byte_ranges([forms[".xz"], forms[""]], 4)
    assert ranges[0] == (str(forms[".xz"]), 0, None)
    assert len(ranges) >= 4 and all(r[0] == str(forms[""]) for r in ranges[1:])
    # start / end count decompressed bytes
    assert list(iter_lines(forms[".gz"], start=14, end=28)) == ["line 2\n", "line 3\n"]


@pytest.mark.parametrize("ext, kind", [(".gz", "gzip"), (".xz", "xz"), (".bz2", "bz2")])
def test_truncated_compressed_stream_names_the_file(tmp_path, ext, kind):
    forms = write_all_forms(tmp_path, LEE.read_bytes()[:100_000])
    cut = tmp_path / ("cut.txt" + ext)
    cut.write_bytes(forms[ext].read_bytes()[:-200])
    with pytest.raises(CorpusError, match=re.escape(f"{cut}: corrupt or truncated {kind} stream after ")):
        list(iter_lines(cut))
    with pytest.raises(CorpusError, match=re.escape(f"{cut}: corrupt or truncated {kind} stream")):
        count_words_in_files([cut], None, pre_tokenizers.BertPreTokenizer())
    not_compressed = tmp_path / ("plain.txt" + ext)
    not_compressed.write_bytes(b"plain text under a compressed name\n")
    with pytest.raises(CorpusError, match=re.escape(f"{not_compressed}: corrupt or truncated {kind} stream")):
        list(iter_lines(not_compressed))


def test_corrupt_gzip_body_names_the_file(tmp_path):
    data = bytearray(gzip.compress(LEE.read_bytes()[:50_000]))
    data[len(data) // 2] ^= 0xFF
    p = tmp_path / "flipped.txt.gz"
    p.write_bytes(bytes(data))
    with pytest.raises(CorpusError, match=re.escape(f"{p}: corrupt or truncated gzip stream")):
        list(iter_lines(p))


def test_undecodable_bytes_in_compressed_file_name_file_and_decompressed_offset(tmp_path):
    forms = write_all_forms(tmp_path, b"good line\n" * 3000 + b"ok \xff\xfe here\n", stem="bad.txt")
    for ext in COMPRESSORS:
        with pytest.raises(
            CorpusError, match=re.escape(f"{forms[ext]}: decompressed byte offset 30003: invalid UTF-8")
        ):
            list(iter_lines(forms[ext]))
        assert list(iter_lines(forms[ext], errors="replace"))[-1] == "ok \ufffd\ufffd here\n"


def awkward_bytes(mixed_lines) -> bytes:
    """Real text plus what counting by chunks must get right: separators that str.split() splits at
    and BertNormalizer deletes (\\x0b, \\x0c, \\x1c-\\x1f, \\x85), Unicode spaces inside a chunk of
    bytes, undecodable bytes before a space and at the end, CRLF, a line longer than a block."""
    extra = [
        "a\x1cb \x1d c\x1e\x1fd e\n",
        "v\x0bw x\x0cy\n",
        "x\u00a0y\u3000z\u2009w\u0085v\n",
        "windows\r\nline\r\n",
        "long" + "o" * 3000 + " tail\n",
    ]
    data = "".join(mixed_lines + extra).encode("utf-8")
    return data + b"bad\xe2\x82 byte\xff\xfe here \xc3\n" + b"end\xe2"


@pytest.mark.parametrize("name", ["bert", "bert-cased", "whitespace-nfkc", "whitespace-split"])
def test_chunk_count_equals_line_count(name, tmp_path, mixed_lines):
    norm, pre = PIPELINES[name]()
    p = tmp_path / "awkward.txt"
    p.write_bytes(awkward_bytes(mixed_lines))
    lines = list(iter_lines(p, errors="replace")) + list(iter_lines(LEE))
    expected = reference_counts(lines, norm, pre)
    assert count_words(lines, norm, pre) == expected
    got = count_words_in_files([p, LEE], norm, pre, "replace", workers=1)
    assert got == expected
    par = count_words_in_files([p, LEE], norm, pre, "replace", workers=3, parallel_min_bytes=0)
    assert list(par.items()) == list(got.items())
    # on text that counting by lines splits as the pipeline does, both give the words in one order
    plain = [line.rstrip("\n") + "\n" for line in lines if not any(c in line for c in "\x0b\x0c\x1c\x1d\x1e\x1f\x85")]
    p.write_text("".join(plain), encoding="utf-8")
    assert list(count_words_in_files([p], norm, pre, workers=1).items()) == list(count_words(plain, norm, pre).items())


def test_chunks_across_block_edges_and_ranges(tmp_path, mixed_lines, monkeypatch):
    from bertology.tokenizers.fast import chunks

    p = tmp_path / "awkward.txt"
    p.write_bytes(awkward_bytes(mixed_lines))
    whole = chunks.count_chunks(str(p), strict=False)
    expected = collections.Counter(c for c in re.split(rb"[ \t\r\n]+", p.read_bytes()) if c)
    assert list(whole.items()) == list(expected.items())
    monkeypatch.setattr(chunks, "BLOCK", 7)  # blocks cut words, runs without a space, multi-byte characters
    assert list(chunks.count_chunks(str(p), strict=False).items()) == list(whole.items())
    parts = collections.Counter()
    for _, start, end in corpus.byte_ranges([p], 5):
        parts.update(chunks.count_chunks(str(p), start, end, strict=False))
    assert parts == whole
    with pytest.raises(UnicodeDecodeError):
        chunks.count_chunks(str(p))


def test_chunk_workers_report_bad_bytes_of_a_compressed_file(tmp_path):
    forms = write_all_forms(tmp_path, b"ok line\n" * 5000 + b"bad \xff\n")
    pre = pre_tokenizers.BertPreTokenizer()
    for ext in COMPRESSORS:
        with pytest.raises(CorpusError, match=re.escape(f"decompressed byte offset {8 * 5000 + 4}: invalid UTF-8")):
            count_words_in_files([forms[ext], LEE], None, pre, workers=2, parallel_min_bytes=0)
