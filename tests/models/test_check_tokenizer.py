"""models.check_tokenizer: a tokenizer that does not belong to the model is refused on load, naming the file
and what differs (vocabulary, pad token, positions), before a command writes anything."""

import pytest

from bertology.models import check_tokenizer, get_family
from bertology.tokenizers import train

LINES = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the sea"] * 20


@pytest.fixture(scope="module")
def tok():
    return train(lines=LINES, family="bert", vocab_size=120, show_progress=False)


def config(tok, **kw):
    return get_family("bert").preset(
        "tiny", **{"vocab_size": tok.vocab_size, "pad_token_id": tok.token_to_id("[PAD]"), **kw}
    )


def test_a_tokenizer_made_for_the_model_passes(tok):
    check_tokenizer(config(tok), tok, "tok.json")
    check_tokenizer(config(tok, vocab_size=tok.vocab_size + 8), tok, "tok.json")  # a padded table is fine


def test_more_pieces_than_embedding_rows(tok):
    with pytest.raises(
        ValueError,
        match=rf"tok.json: {tok.vocab_size} tokens with ids up to {tok.vocab_size - 1} .*past "
        rf"the {tok.vocab_size - 5} rows of the model's embedding table",
    ):
        check_tokenizer(config(tok, vocab_size=tok.vocab_size - 5), tok, "tok.json")


def test_a_pad_token_other_than_the_configs(tok):
    pad = tok.token_to_id("[PAD]")
    with pytest.raises(
        ValueError, match=rf"pads with '\[PAD\]' = id {pad}, but config.json's pad_token_id is {pad + 3}"
    ):
        check_tokenizer(config(tok, pad_token_id=pad + 3), tok, "tok.json")


def test_truncation_longer_than_the_positions(tok):
    c = config(tok, max_position_embeddings=64)
    tok.enable_truncation(128)
    try:
        with pytest.raises(ValueError, match="truncates to 128 tokens, more than the model's 64 positions"):
            check_tokenizer(c, tok, "tok.json")
    finally:
        tok.no_truncation()
