"""train(): every family's tokenizer saves to a tokenizer.json that Hugging Face tokenizers loads
and encodes to the same ids, tokens, offsets and type ids; bad arguments fail clearly."""

import doctest
import subprocess
import sys
from pathlib import Path

import pytest

import bertology.tokenizers.training as training
from bertology.tokenizers import Tokenizer
from bertology.tokenizers.corpus import CorpusError
from bertology.tokenizers.training import train

LEE = Path(__import__("gensim").__file__).parent / "test" / "test_data" / "lee_background.cor"
TEXTS = [
    "Hello, world! Héllo  Wörld 北京 don't",
    "The quick brown fox jumps over the lazy dog.",
    "  spaces   here\tand\nnewline",
    "Prime Minister John Howard said on Tuesday",
]
EXPECTED_SPECIALS = {
    "bert": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    "albert": ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"],
    "xlnet": ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>"],
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    # a third of the Lee corpus keeps the fast suite fast
    p = tmp_path_factory.mktemp("corpus") / "lee.txt"
    lines = LEE.read_text(encoding="utf-8").splitlines(keepends=True)
    p.write_text("".join(lines[:100]), encoding="utf-8")
    return p


@pytest.mark.parametrize("family", list(EXPECTED_SPECIALS))
def test_family_tokenizer_loads_in_tokenizers_and_encodes_the_same(family, corpus, tmp_path):
    from tokenizers import Tokenizer as HFTokenizer

    tok = train([corpus], family=family, vocab_size=1200, show_progress=False)
    assert tok.vocab_size == 1200
    specials = EXPECTED_SPECIALS[family]
    assert [tok.token_to_id(t) for t in specials] == list(range(len(specials)))
    path = tok.save(tmp_path / "tokenizer.json")
    hf = HFTokenizer.from_file(str(path))
    assert hf.get_vocab() == tok.get_vocab()
    for a, b in zip(TEXTS, TEXTS[1:] + TEXTS[:1]):
        for ours, theirs in [(tok.encode(a), hf.encode(a)), (tok.encode(a, b), hf.encode(a, b))]:
            assert ours.tokens == theirs.tokens
            assert ours.ids == theirs.ids
            assert ours.type_ids == theirs.type_ids
            assert [tuple(o) for o in ours.offsets] == [tuple(o) for o in theirs.offsets]
        assert tok.decode(tok.encode(a).ids) == hf.decode(hf.encode(a).ids)
    # the reloaded file is the same tokenizer for us too
    again = Tokenizer.load(path)
    assert again.encode(TEXTS[3]).ids == tok.encode(TEXTS[3]).ids


@pytest.mark.parametrize("algorithm", ["bpe", "unigram", "wordpiece", "bytelevel-bpe"])
def test_plain_algorithm_tokenizer_loads_in_tokenizers_and_encodes_the_same(algorithm, corpus, tmp_path):
    from tokenizers import Tokenizer as HFTokenizer

    tok = train([corpus], algorithm=algorithm, vocab_size=900, show_progress=False)
    hf = HFTokenizer.from_file(str(tok.save(tmp_path / "tokenizer.json")))
    for a, b in zip(TEXTS, TEXTS[1:] + TEXTS[:1]):
        ours, theirs = tok.encode(a, b), hf.encode(a, b)
        assert (ours.tokens, ours.ids, ours.type_ids) == (theirs.tokens, theirs.ids, theirs.type_ids)
        assert [tuple(o) for o in ours.offsets] == [tuple(o) for o in theirs.offsets]
        assert tok.decode(ours.ids) == hf.decode(theirs.ids)


def test_templates_per_family(corpus):
    bert = train([corpus], family="bert", vocab_size=800, show_progress=False)
    assert bert.encode("a", "b").tokens == ["[CLS]", "a", "[SEP]", "b", "[SEP]"]
    xlnet = train([corpus], family="xlnet", vocab_size=800, show_progress=False)
    enc = xlnet.encode("a", "b")
    assert enc.tokens[-1] == "<cls>" and enc.type_ids[-1] == 2
    assert xlnet.padding["direction"] == "left" and xlnet.padding["pad_type_id"] == 3
    batch = xlnet.encode_batch(["a", "the the the"])
    assert batch[0].tokens[0] == "<pad>" and batch[0].attention_mask[0] == 0


def test_bytelevel_bpe_covers_every_byte(corpus):
    tok = train([corpus], algorithm="bytelevel-bpe", vocab_size=600, show_progress=False)
    enc = tok.encode("ünïcödé ✓ 😀", add_special_tokens=False)
    assert None not in enc.ids and tok.decode(enc.ids) == "ünïcödé ✓ 😀"


def test_plain_bpe_and_wordpiece_frequency_mode(corpus):
    bpe = train([corpus], algorithm="bpe", vocab_size=800, show_progress=False)
    assert any(t.endswith("</w>") for t in bpe.get_vocab())
    assert bpe.decode(bpe.encode("the government said").ids) == "the government said"
    wp = train([corpus], algorithm="wordpiece", vocab_size=800, criterion="frequency", show_progress=False)
    assert wp.encode("the", add_special_tokens=False).tokens == ["the"]


def test_lines_instead_of_files():
    tok = train(
        lines=["low lower lowest"] * 5, algorithm="wordpiece", vocab_size=40, min_frequency=1, show_progress=False
    )
    assert "low" in tok.get_vocab()


def test_bad_arguments(corpus, tmp_path):
    with pytest.raises(ValueError, match="unknown algorithm 'sentencepiece'"):
        train([corpus], algorithm="sentencepiece")
    with pytest.raises(ValueError, match="unknown family 'gpt'"):
        train([corpus], family="gpt")
    with pytest.raises(ValueError, match="family 'roberta' uses algorithm 'bytelevel-bpe'"):
        train([corpus], family="roberta", algorithm="wordpiece")
    with pytest.raises(ValueError, match=r"lacks \['\[CLS\]', '\[SEP\]'\]"):
        train([corpus], family="bert", special_tokens=["[PAD]", "[UNK]"])
    with pytest.raises(ValueError, match="vocab_size=50 is smaller than the 5 special tokens"):
        train([corpus], family="bert", vocab_size=50, show_progress=False)
    with pytest.raises(ValueError, match="vocab_size=100 is smaller"):
        train([corpus], algorithm="bytelevel-bpe", vocab_size=100, show_progress=False)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="empty corpus"):
        train([empty], show_progress=False)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xc3(\n")
    with pytest.raises(CorpusError, match="bad.txt: byte offset 5"):
        train([bad], show_progress=False)
    tok = train([bad], algorithm="unigram", errors="replace", vocab_size=12, show_progress=False)
    assert any("\ufffd" in t for t in tok.get_vocab())  # NFKC keeps U+FFFD (BERT's cleaning drops it)


def test_docstring_examples():
    assert doctest.testmod(training).failed == 0


def test_wordpiece_training_leaves_numpy_unimported(corpus, tmp_path):
    """numpy (Unigram's) would add about 15 MB to every training's peak memory."""
    code = (
        "import sys; from bertology.tokenizers import train; "
        f"train(files=[{str(corpus)!r}], family='bert', vocab_size=300, show_progress=False)"
        f".save({str(tmp_path / 'tokenizer.json')!r}); "
        "assert 'numpy' not in sys.modules, 'numpy imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture(scope="module")
def wiki_file(tmp_path_factory):
    """~300 KB of the English Wikipedia extract that ships with gensim (raw wikitext)."""
    import bz2

    src = LEE.parent / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
    out, size = [], 0
    with bz2.open(src, "rt", encoding="utf-8") as f:
        for line in f:
            if size > 300_000:
                break
            if line.strip() and not line.lstrip().startswith("<"):
                out.append(line)
                size += len(line)
    p = tmp_path_factory.mktemp("wiki") / "wiki.txt"
    p.write_text("".join(out), encoding="utf-8")
    return p


def test_bytelevel_bpe_merges_equal_tokenizers_on_wikipedia(wiki_file):
    from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers, trainers

    ours = train([wiki_file], family="roberta", vocab_size=4000, min_frequency=2, show_progress=False)
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.train(
        [str(wiki_file)],
        trainers.BpeTrainer(
            vocab_size=4000,
            min_frequency=2,
            special_tokens=EXPECTED_SPECIALS["roberta"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    import json

    theirs = json.loads(hf.to_str())["model"]
    mine = ours.to_json()["model"]
    as_pairs = lambda ms: [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in ms]  # noqa: E731
    assert as_pairs(mine["merges"]) == as_pairs(theirs["merges"])
    assert mine["vocab"] == theirs["vocab"]


def test_wordpiece_frequency_mode_equals_tokenizers_on_wikipedia(wiki_file):
    from tokenizers import Tokenizer as HFTokenizer, models, normalizers, pre_tokenizers, trainers

    ours = train(
        [wiki_file], family="bert", vocab_size=4000, min_frequency=2, criterion="frequency", show_progress=False
    ).get_vocab()
    hf = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.train(
        [str(wiki_file)],
        trainers.WordPieceTrainer(
            vocab_size=4000, min_frequency=2, special_tokens=EXPECTED_SPECIALS["bert"], show_progress=False
        ),
    )
    theirs = hf.get_vocab()
    assert len(ours) == len(theirs) == 4000
    # the same words were counted, so the same alphabet; merges agree up to ties that tokenizers
    # breaks by the (random) hash order of its "##" symbols
    single = lambda v: {t for t in v if len(t.removeprefix("##")) == 1}  # noqa: E731
    assert single(ours) == single(theirs)
    assert len(set(ours) ^ set(theirs)) <= 0.02 * len(theirs)


@pytest.mark.slow
def test_bytelevel_bpe_parity_on_the_whole_wikipedia_extract(tmp_path):
    import bz2
    import json
    from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers, trainers

    src = LEE.parent / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
    p = tmp_path / "wiki.txt"
    p.write_bytes(bz2.open(src).read())
    ours = train([p], family="roberta", vocab_size=30000, min_frequency=2, show_progress=False)
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.train(
        [str(p)],
        trainers.BpeTrainer(
            vocab_size=30000,
            min_frequency=2,
            special_tokens=EXPECTED_SPECIALS["roberta"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    theirs = json.loads(hf.to_str())["model"]
    mine = ours.to_json()["model"]
    as_pairs = lambda ms: [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in ms]  # noqa: E731
    assert as_pairs(mine["merges"]) == as_pairs(theirs["merges"])
    assert mine["vocab"] == theirs["vocab"]
