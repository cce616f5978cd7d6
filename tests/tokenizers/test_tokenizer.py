"""Parity of the whole pipeline with the `tokenizers` library on real text."""

from __future__ import annotations

import pytest
import tokenizers
import torch

from bertology.tokenizers import Tokenizer


@pytest.fixture(scope="module")
def minilm(minilm_json):
    ours, ref = Tokenizer.load(minilm_json), tokenizers.Tokenizer.from_file(str(minilm_json))
    ours.no_padding(), ours.no_truncation(), ref.no_padding(), ref.no_truncation()
    return ours, ref


@pytest.fixture(scope="module")
def bbpe(bytelevel_bpe_json):
    return Tokenizer.load(bytelevel_bpe_json), tokenizers.Tokenizer.from_file(str(bytelevel_bpe_json))


@pytest.fixture(scope="module")
def gpt2(gpt2_bpe_json):
    return Tokenizer.load(gpt2_bpe_json), tokenizers.Tokenizer.from_file(str(gpt2_bpe_json))


def test_wordpiece_tokenizer_json_matches_tokenizers(minilm, real_texts, same_encoding):
    ours, ref = minilm
    for text, r in zip(real_texts, ref.encode_batch(real_texts)):
        same_encoding(ours.encode(text), r, text)


def test_wordpiece_vocab_txt_builds_the_bert_uncased_pipeline(minilm_vocab, minilm, real_texts, same_encoding):
    ours = Tokenizer.load(minilm_vocab)
    ref = minilm[1]
    for text, r in zip(real_texts, ref.encode_batch(real_texts)):
        same_encoding(ours.encode(text), r, text)


def test_vocab_txt_cased_option(minilm_vocab):
    cased = Tokenizer.load(minilm_vocab, lowercase=False)
    assert cased.encode("Hello").tokens == ["[CLS]", "[UNK]", "[SEP]"]  # the vocab is uncased
    assert Tokenizer.load(minilm_vocab).encode("Hello").tokens == ["[CLS]", "hello", "[SEP]"]


def test_wordpiece_pairs_with_truncation(minilm, enwiki_lines, same_encoding):
    ours, ref = minilm
    pairs = [(a[:300], b[:200]) for a, b in zip(enwiki_lines[100:140], enwiki_lines[200:240])]
    for strategy in ("longest_first", "only_first", "only_second"):
        for max_length, stride in ((24, 0), (40, 5)):
            ref.enable_truncation(max_length, stride=stride, strategy=strategy)
            ours.enable_truncation(max_length, stride=stride, strategy=strategy)
            for a, b in pairs:
                try:
                    r = ref.encode(a, b)
                except Exception as e:  # the reference refuses (sequence too short): so must we
                    with pytest.raises(ValueError):
                        ours.encode(a, b)
                    assert "too short" in str(e) or "stride" in str(e)
                    continue
                same_encoding(ours.encode(a, b), r, (a, b))
    ref.no_truncation(), ours.no_truncation()


def test_padding_and_overflow_match_tokenizers(minilm, enwiki_lines, same_encoding):
    ours, ref = minilm
    texts = [t[:400] for t in enwiki_lines[300:330]]
    try:
        for direction in ("right", "left"):
            ref.enable_truncation(16, stride=4)
            ours.enable_truncation(16, stride=4)
            ref.enable_padding(direction=direction, pad_id=0, pad_token="[PAD]")
            ours.enable_padding(direction=direction, pad_id=0, pad_token="[PAD]")
            for o, r in zip(ours.encode_batch(texts), ref.encode_batch(texts)):
                same_encoding(o, r)
            ref.enable_padding(length=20, pad_to_multiple_of=8)
            ours.enable_padding(length=20, pad_to_multiple_of=8)
            for o, r in zip(ours.encode_batch(texts, texts[::-1]), ref.encode_batch(list(zip(texts, texts[::-1])))):
                same_encoding(o, r)
    finally:
        ref.no_truncation(), ours.no_truncation(), ref.no_padding(), ours.no_padding()


def test_bytelevel_bpe_matches_tokenizers(bbpe, real_texts, same_encoding):
    ours, ref = bbpe
    for text, r in zip(real_texts, ref.encode_batch(real_texts)):
        same_encoding(ours.encode(text), r, text)
    pairs = list(zip(real_texts[:50], real_texts[50:100]))
    for (a, b), r in zip(pairs, ref.encode_batch(pairs)):
        same_encoding(ours.encode(a, b), r, (a, b))


def test_gpt2_style_bpe_matches_tokenizers(gpt2, real_texts, same_encoding):
    ours, ref = gpt2
    for text, r in zip(real_texts, ref.encode_batch(real_texts)):
        same_encoding(ours.encode(text), r, text)


def test_bytelevel_decode_round_trips(bbpe, real_texts):
    ours, ref = bbpe
    for text in real_texts:
        ids = ours.encode(text, add_special_tokens=False).ids
        assert ours.decode(ids) == ref.decode(ids)
        expected = text if text.startswith(" ") or not text else " " + text  # add_prefix_space
        assert ours.decode(ids) == expected


def test_wordpiece_decode_matches_tokenizers(minilm, real_texts):
    ours, ref = minilm
    for text in real_texts[:300]:
        ids = ref.encode(text).ids
        assert ours.decode(ids) == ref.decode(ids)
        assert ours.decode(ids, skip_special_tokens=False) == ref.decode(ids, skip_special_tokens=False)


def test_added_tokens_lstrip_rstrip_single_word(minilm, same_encoding):
    ours, ref = minilm
    ours, ref = Tokenizer.from_str(ref.to_str()), tokenizers.Tokenizer.from_str(ref.to_str())
    ref.no_padding(), ref.no_truncation(), ours.no_padding(), ours.no_truncation()
    for t in (ours, ref):
        t.add_special_tokens([tokenizers.AddedToken("<mask>", lstrip=True, rstrip=True)])
        t.add_tokens([tokenizers.AddedToken("ing", single_word=True), "Hello"])
    texts = ["hello   <mask>  world", "<mask>sing ing king", "Hello HELLO hello <mask>", "x<mask><mask>y"]
    for text in texts:
        same_encoding(ours.encode(text), ref.encode(text), text)
    assert ours.vocab_size == ref.get_vocab_size()
    assert ours.token_to_id("<mask>") == ref.token_to_id("<mask>")


def test_encode_batch_padding_truncation_tensors(minilm, enwiki_lines, same_encoding):
    ours, ref = minilm
    texts = enwiki_lines[400:432]
    out = ours.encode_batch(
        texts, padding=True, truncation=True, max_length=32, stride=8, return_overflowing=True, return_tensors="pt"
    )
    ref.enable_truncation(32, stride=8)
    ref.enable_padding(pad_id=0, pad_token="[PAD]")
    try:
        refs = ref.encode_batch(texts)
    finally:
        ref.no_truncation(), ref.no_padding()
    rows, sample = [], []
    for i, r in enumerate(refs):
        rows += [r, *r.overflowing]
        sample += [i] * (1 + len(r.overflowing))
    width = max(len(r.ids) for r in rows)
    expect = [r.ids + [0] * (width - len(r.ids)) for r in rows]
    assert out["input_ids"].tolist() == expect
    assert out["overflow_to_sample_mapping"].tolist() == sample
    assert out["attention_mask"].dtype == torch.long and out["offset_mapping"].shape == (len(rows), width, 2)
    # without return_overflowing the loss is still reported
    plain = ours.encode_batch(texts, padding="max_length", truncation=True, max_length=32, return_tensors="pt")
    assert plain["input_ids"].shape == (len(texts), 32)
    assert plain["num_overflowing"].tolist() == [
        len(r.overflowing) for r in ours.encode_batch(texts, truncation=True, max_length=32)
    ]


def test_ragged_tensors_are_refused(minilm):
    with pytest.raises(ValueError, match="padding"):
        minilm[0].encode_batch(["a b c", "a"], return_tensors="pt")


def test_tokenizer_json_settings_are_honoured(minilm_json, enwiki_lines, same_encoding):
    """MiniLM's file enables truncation to 128 and fixed padding to 128: both must apply."""
    ours, ref = Tokenizer.load(minilm_json), tokenizers.Tokenizer.from_file(str(minilm_json))
    texts = enwiki_lines[:20] + [" ".join(enwiki_lines[:40])]
    for o, r in zip(ours.encode_batch(texts), ref.encode_batch(texts)):
        assert len(o) == 128
        same_encoding(o, r)
