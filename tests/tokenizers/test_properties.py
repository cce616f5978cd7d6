"""Property tests on arbitrary Unicode: nothing raises, offsets stay inside the input,
byte-level BPE decodes back to exactly the input."""

from __future__ import annotations

import pytest
from hypothesis import assume, HealthCheck, given, settings, strategies as st

from bertology.tokenizers import Tokenizer
from bertology.tokenizers.byte_level import CHAR_TO_BYTE

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def toks(minilm_json, bytelevel_bpe_json, gpt2_bpe_json):
    wp = Tokenizer.load(minilm_json)
    wp.no_padding(), wp.no_truncation()
    return {"wordpiece": wp, "bbpe": Tokenizer.load(bytelevel_bpe_json), "gpt2": Tokenizer.load(gpt2_bpe_json)}


def _offsets_inside(enc, s):
    for a, b in enc.offsets:
        assert 0 <= a <= b <= len(s), (s, a, b)


@SETTINGS
@given(s=text)
def test_wordpiece_never_raises_offsets_inside(toks, s):
    enc = toks["wordpiece"].encode(s)
    _offsets_inside(enc, s)
    assert len(enc.ids) == len(enc.tokens) == len(enc.offsets) == len(enc.word_ids)
    toks["wordpiece"].decode(enc.ids)


def _offsets_inside_each_sequence(enc, texts):
    """Every token of sequence k has offsets inside texts[k]; special tokens have (0, 0)."""
    for (a, b), seq in zip(enc.offsets, enc.sequence_ids):
        if seq is None:
            assert (a, b) == (0, 0)
        else:
            assert 0 <= a <= b <= len(texts[seq]), (texts, seq, a, b)


@SETTINGS
@given(s=text, p=text)
def test_bytelevel_round_trips_exactly(toks, s, p):
    for name in ("bbpe", "gpt2"):
        tok = toks[name]
        # A literal special token in the text ("<unk>", "</s>") is matched as that token, as in
        # `tokenizers`, and decode() skips it: the round trip holds for all other text.
        assume(not any(t.content in s or t.content in p for t in tok.added_tokens))
        enc = tok.encode(s)
        _offsets_inside(enc, s)
        prefixed = " " + s if name == "bbpe" and s and not s.startswith(" ") else s
        # byte-level never needs an unknown token: every text token is a vocabulary entry made
        # of byte stand-ins, and together they are exactly the (prefixed) text's UTF-8 bytes
        text_tokens = [(i, t) for i, t, special in zip(enc.ids, enc.tokens, enc.special_tokens_mask) if not special]
        assert all(tok.model.token_to_id(t) == i for i, t in text_tokens)
        assert b"".join(bytes(CHAR_TO_BYTE[c] for c in t) for _, t in text_tokens) == prefixed.encode("utf-8")
        assert tok.decode(enc.ids) == prefixed
        _offsets_inside_each_sequence(tok.encode(s, p), [s, p])


@SETTINGS
@given(s=text)
def test_bytelevel_matches_tokenizers_on_arbitrary_text(toks, bytelevel_bpe_json, s):
    ref = _ref(str(bytelevel_bpe_json))
    o, r = toks["bbpe"].encode(s), ref.encode(s)
    assert o.ids == r.ids and o.offsets == r.offsets


_REFS = {}


def _ref(path):
    import tokenizers

    if path not in _REFS:
        _REFS[path] = tokenizers.Tokenizer.from_file(path)
    return _REFS[path]
