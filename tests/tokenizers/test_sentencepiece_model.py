"""SentencePiece .model reader and spm_spec() (what Tokenizer.load builds from a .model): ids equal
SentencePieceProcessor.encode."""

import pytest
import sentencepiece as spm

from bertology.tokenizers import Tokenizer
from bertology.tokenizers.sentencepiece_model import SentencePieceNormalizer, parse_model, read_model, spm_spec
from test_unigram import GENSIM_DATA, wiki_lines

RUSSIAN = (GENSIM_DATA / "crime-and-punishment.txt").read_text(encoding="utf-8").splitlines()
HARD = [
    "  Hello\t\tworld  ",
    "ﬁne ＡＢＣ① café cafe\u0301 naïve",
    "漢字テスト、カタカナとひらがな。",
    "☃☃ snow☃man ☃",
    "",
    "   ",
    "a\u3000b\u00a0c",
    "<s> hi </s> <unk>",
    "tab\tnew\nline",
    "Ünïcödé ǅ ß ﬀ ½ ㎏ ™",
    "Привет, мир!  Как   дела?",
]


def train_spm(tmp_path, name, **kw):
    corpus = tmp_path / "corpus.txt"
    if not corpus.exists():
        corpus.write_text("\n".join(wiki_lines(0, 300) + RUSSIAN + HARD), encoding="utf-8")
    args = dict(
        input=str(corpus),
        model_prefix=str(tmp_path / name),
        vocab_size=1500,
        model_type="unigram",
        minloglevel=2,
        num_threads=2,
    )
    args.update(kw)
    spm.SentencePieceTrainer.train(**args)
    return tmp_path / f"{name}.model"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("spm")
    return {
        "nfkc": train_spm(d, "nfkc"),
        "bytes": train_spm(
            d, "bytes", byte_fallback=True, pad_id=3, unk_piece="[UNK]", character_coverage=0.98, vocab_size=1200
        ),
        "bpe": train_spm(d, "bpe", model_type="bpe", vocab_size=800),
    }


def test_pieces_and_specs_equal_sentencepiece(models):
    for key in ("nfkc", "bytes"):
        sp = spm.SentencePieceProcessor(model_file=str(models[key]))
        m = read_model(models[key])
        assert len(m.pieces) == sp.get_piece_size()
        for i, (piece, score, kind) in enumerate(m.pieces):
            assert piece == sp.id_to_piece(i)
            assert score == pytest.approx(sp.get_score(i))
            assert (kind == "control") == sp.is_control(i) and (kind == "unknown") == sp.is_unknown(i)
            assert (kind == "byte") == sp.is_byte(i) and (kind == "unused") == sp.is_unused(i)
        ts = m.trainer_spec
        assert (ts.unk_id, ts.bos_id, ts.eos_id, ts.pad_id) == (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id())
        assert m.normalizer_spec.name == "nmt_nfkc" and len(m.normalizer_spec.precompiled_charsmap) > 1000
    m = read_model(models["bytes"])
    assert m.trainer_spec.byte_fallback and m.trainer_spec.unk_piece == "[UNK]" and m.trainer_spec.pad_id == 3
    assert sum(k == "byte" for _, _, k in m.pieces) == 256
    assert read_model(models["bpe"]).trainer_spec.model_type == "bpe"


@pytest.mark.parametrize("key", ["nfkc", "bytes"])
def test_spm_spec_encodes_like_sentencepiece(models, key):
    sp = spm.SentencePieceProcessor(model_file=str(models[key]))
    tok = Tokenizer.from_spec(spm_spec(models[key]))
    texts = wiki_lines(3000, 300) + RUSSIAN + HARD
    for t in texts:
        assert tok.encode(t, add_special_tokens=False).ids == sp.encode(t), t
    assert tok.vocab_size == sp.get_piece_size()


def test_normalizer_equals_sentencepiece_normalize(models):
    sp = spm.SentencePieceProcessor(model_file=str(models["nfkc"]))
    m = read_model(models["nfkc"])
    ns = m.normalizer_spec
    norm = SentencePieceNormalizer(
        ns.precompiled_charsmap, ns.add_dummy_prefix, ns.remove_extra_whitespaces, ns.escape_whitespaces
    )
    for t in HARD + RUSSIAN[:20] + wiki_lines(100, 50):
        assert norm.normalize_str(t) == sp.normalize(t), t


def test_nbest_equals_sentencepiece(models):
    sp = spm.SentencePieceProcessor(model_file=str(models["nfkc"]))
    model = spm_spec(models["nfkc"]).model
    for word in ["international", "tokenization", "Привет", "unbelievable", "the"]:
        ref = sp.nbest_encode(word, nbest_size=6, out_type=str)
        got = [[t.value for t in toks] for toks, _ in model.nbest("▁" + word, 6)]
        assert got == ref, word


def test_truncated_and_malformed_files_raise_clear_errors(models, tmp_path):
    data = models["nfkc"].read_bytes()
    bad = tmp_path / "truncated.model"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"truncated\.model.*byte offset \d+"):
        read_model(bad)
    with pytest.raises(ValueError, match=r"byte offset 0: unsupported wire type 7"):
        parse_model(b"\x0f\x00", "x.model")
    with pytest.raises(ValueError, match="no pieces"):
        parse_model(b"", "empty.model")


def test_bpe_model_type_is_refused_by_name(models):
    with pytest.raises(ValueError, match=r"bpe\.model.*model_type 'bpe' is not supported"):
        spm_spec(models["bpe"])


def test_tokenizer_load_reads_a_model_file(models):
    sp = spm.SentencePieceProcessor(model_file=str(models["nfkc"]))
    tok = Tokenizer.load(models["nfkc"])
    assert tok.encode("Hello  world, Привет", add_special_tokens=False).ids == sp.encode("Hello  world, Привет")
