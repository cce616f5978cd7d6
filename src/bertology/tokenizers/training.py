"""`train(files, ...)`: a ready Tokenizer from raw text, with the right pipeline for its family.

    >>> tok = train(["corpus.txt"], family="bert", vocab_size=30000)   # doctest: +SKIP
    >>> tok.encode("Hello, world!").tokens                              # doctest: +SKIP
    ['[CLS]', 'hello', ',', 'world', '!', '[SEP]']

A family fixes everything around the model, as the released checkpoints have it:

| family  | normalizer              | pre-tokenizer | model          | template                     | specials                              |
|---------|-------------------------|---------------|----------------|------------------------------|---------------------------------------|
| bert    | BertNormalizer (lower)  | BertPreTok.   | WordPiece      | [CLS] A [SEP] B [SEP]        | [PAD] [UNK] [CLS] [SEP] [MASK]        |
| roberta | -                       | ByteLevel     | byte-level BPE | <s> A </s></s> B </s>        | <s> <pad> </s> <unk> <mask>           |
| albert  | NFKC + Lowercase        | Metaspace     | Unigram        | [CLS] A [SEP] B [SEP]        | <pad> <unk> [CLS] [SEP] [MASK]        |
| xlnet   | NFKC                    | Metaspace     | Unigram        | A <sep> B <sep> <cls>, left pad | <unk> <s> </s> <cls> <sep> <pad> <mask> |

Without a family, the algorithm picks one: wordpiece -> bert, bytelevel-bpe -> roberta; plain
"bpe" is character BPE with an end-of-word suffix (no template) and plain "unigram" a
SentencePiece-style tokenizer (no template): NFKC, whitespace runs as one space and none at the
ends (SentencePiece's remove_extra_whitespaces: without it every extra space of indented text is
a "▁" token, 12-17% more tokens per word on the bench's Python docs), then Metaspace.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable

from . import decoders, normalizers, post_processors, pre_tokenizers
from .added_tokens import AddedToken
from .bpe_trainer import BpeTrainer
from .corpus import count_words, count_words_in_files
from .tokenizer import Tokenizer
from .wordpiece_trainer import WordPieceTrainer

ALGORITHMS = ("wordpiece", "bpe", "bytelevel-bpe", "unigram")
FAMILIES = ("bert", "roberta", "albert", "xlnet")


@dataclass
class TokenizerKind:
    """What surrounds the model: built fresh for every train() call."""

    algorithm: str
    special_tokens: list[str]
    unk_token: str | None
    normalizer: Callable[[], object | None]
    pre_tokenizer: Callable[[], object | None]
    decoder: Callable[[], object | None]
    template: Callable[[Tokenizer], object | None] = lambda tok: None
    required: tuple[str, ...] = ()  # specials the template / padding refers to
    lstrip: tuple[str, ...] = ()  # specials that take the space before them (roberta-base's <mask>)
    trainer_defaults: dict = field(default_factory=dict)
    finish: Callable[[Tokenizer], None] = lambda tok: None


def _ids(tok: Tokenizer, *tokens: str) -> list[int]:
    return [tok.token_to_id(t) for t in tokens]


def _xlnet_finish(tok: Tokenizer) -> None:
    # XLNet pads on the left, with token type 3 (its "padding" segment)
    tok.enable_padding(direction="left", pad_id=tok.token_to_id("<pad>"), pad_type_id=3, pad_token="<pad>")


KINDS: dict[str, TokenizerKind] = {
    "bert": TokenizerKind(
        "wordpiece",
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        "[UNK]",
        lambda: normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
        ),
        pre_tokenizers.BertPreTokenizer,
        lambda: decoders.WordPiece(prefix="##"),
        lambda tok: post_processors.bert_processing(*_ids(tok, "[CLS]", "[SEP]")),
        required=("[CLS]", "[SEP]", "[UNK]"),
    ),
    "roberta": TokenizerKind(
        "bytelevel-bpe",
        ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        None,
        lambda: None,
        lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True),
        lambda: decoders.ByteLevel(),
        lambda tok: post_processors.roberta_processing(*_ids(tok, "<s>", "</s>")),
        required=("<s>", "</s>"),
        lstrip=("<mask>",),
    ),
    "albert": TokenizerKind(
        "unigram",
        ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"],
        "<unk>",
        lambda: normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
        lambda: pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
        lambda: decoders.Metaspace(replacement="▁", prepend_scheme="always"),
        lambda tok: post_processors.albert_processing(*_ids(tok, "[CLS]", "[SEP]")),
        required=("[CLS]", "[SEP]", "<unk>"),
    ),
    "xlnet": TokenizerKind(
        "unigram",
        ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>"],
        "<unk>",
        normalizers.NFKC,
        lambda: pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
        lambda: decoders.Metaspace(replacement="▁", prepend_scheme="always"),
        lambda tok: post_processors.xlnet_processing(*_ids(tok, "<sep>", "<cls>")),
        required=("<sep>", "<cls>", "<pad>", "<unk>"),
        finish=_xlnet_finish,
    ),
    # no family: the plain pipelines
    "bpe": TokenizerKind(
        "bpe",
        ["<unk>"],
        "<unk>",
        lambda: normalizers.BertNormalizer(lowercase=False),
        pre_tokenizers.BertPreTokenizer,
        lambda: decoders.BPEDecoder(suffix="</w>"),
        trainer_defaults={"end_of_word_suffix": "</w>"},
    ),
    "unigram": TokenizerKind(
        "unigram",
        ["<unk>"],
        "<unk>",
        lambda: normalizers.Sequence(
            [normalizers.NFKC(), normalizers.Replace({"Regex": " {2,}"}, " "), normalizers.Strip()]
        ),
        lambda: pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
        lambda: decoders.Metaspace(replacement="▁", prepend_scheme="always"),
    ),
}
_DEFAULT_FAMILY = {"wordpiece": "bert", "bytelevel-bpe": "roberta", "bpe": "bpe", "unigram": "unigram"}


def resolve(algorithm: str | None, family: str | None) -> tuple[str, TokenizerKind]:
    """(algorithm, kind) for the arguments, or a ValueError naming the bad one.

    >>> resolve(None, "roberta")[0]
    'bytelevel-bpe'
    >>> resolve("wordpiece", None)[1].special_tokens[:2]
    ['[PAD]', '[UNK]']
    """
    if family is not None and family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    if family is None:
        algorithm = algorithm or "wordpiece"
        return algorithm, KINDS[_DEFAULT_FAMILY[algorithm]]
    kind = KINDS[family]
    if algorithm is not None and algorithm != kind.algorithm:
        raise ValueError(f"family {family!r} uses algorithm {kind.algorithm!r}, got algorithm={algorithm!r}")
    return kind.algorithm, kind


def make_trainer(
    algorithm: str,
    vocab_size: int,
    min_frequency: int,
    special_tokens: list[str],
    unk_token: str | None,
    show_progress: bool,
    **kw,
):
    if algorithm == "wordpiece":
        return WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=special_tokens,
            unk_token=unk_token or "[UNK]",
            show_progress=show_progress,
            **kw,
        )
    if algorithm in ("bpe", "bytelevel-bpe"):
        if algorithm == "bytelevel-bpe":
            kw.setdefault("initial_alphabet", pre_tokenizers.ByteLevel.alphabet())
        return BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=special_tokens,
            unk_token=unk_token,
            show_progress=show_progress,
            **kw,
        )
    # imported here: its numpy (about 15 MB of memory, held to the end of a training) only when used
    from .unigram_trainer import UnigramTrainer

    return UnigramTrainer(
        vocab_size=vocab_size, special_tokens=special_tokens, unk_token=unk_token, show_progress=show_progress, **kw
    )


def train(
    files: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
    algorithm: str | None = None,
    vocab_size: int = 30000,
    min_frequency: int = 2,
    special_tokens: list[str] | None = None,
    family: str | None = None,
    show_progress: bool | None = None,
    errors: str = "strict",
    lines: Iterable[str] | None = None,
    **trainer_kw,
) -> Tokenizer:
    """Train a tokenizer on text files (streamed line by line) or on an iterable of `lines`.

    `trainer_kw` goes to the trainer (limit_alphabet, initial_alphabet, criterion="frequency" for
    tokenizers-style WordPiece, shrinking_factor for Unigram, ...). `errors="replace"` accepts
    undecodable bytes as U+FFFD instead of failing. Returns a Tokenizer whose special tokens are
    registered, template set, and which saves to a tokenizer.json that `tokenizers` loads.
    """
    algorithm, kind = resolve(algorithm, family)
    if show_progress is None:
        show_progress = sys.stderr.isatty()
    specials = list(kind.special_tokens if special_tokens is None else special_tokens)
    missing = [t for t in kind.required if t not in specials]
    if missing:
        raise ValueError(f"special_tokens lacks {missing} that the {family or algorithm!r} pipeline needs")
    unk = kind.unk_token if kind.unk_token in specials else None
    normalizer, pre_tokenizer = kind.normalizer(), kind.pre_tokenizer()
    kw = {**kind.trainer_defaults, **trainer_kw}
    trainer = make_trainer(algorithm, vocab_size, min_frequency, specials, unk, show_progress, **kw)

    keep_newlines = algorithm != "unigram"  # SentencePiece reads lines without their ending
    if lines is not None:
        if files is not None:
            raise ValueError("give either files or lines, not both")
        if not keep_newlines:
            lines = (line.rstrip("\r\n") for line in lines)
        word_counts = count_words(lines, normalizer, pre_tokenizer, show_progress)
        if not word_counts:
            raise ValueError("empty corpus: the lines hold no words")
    elif files is None:
        raise ValueError("train() needs files or lines")
    else:
        word_counts = count_words_in_files(files, normalizer, pre_tokenizer, errors, keep_newlines, show_progress)

    model = trainer.train_from_counts(word_counts)
    tok = Tokenizer(model, normalizer=normalizer, pre_tokenizer=pre_tokenizer, decoder=kind.decoder())
    tok.add_special_tokens([AddedToken(t, special=True, lstrip=t in kind.lstrip) for t in specials])
    tok.post_processor = kind.template(tok)
    kind.finish(tok)
    if tok.vocab_size < vocab_size:  # nothing smaller than asked without a word (sentencepiece's Unigram refuses it)
        warnings.warn(
            f"vocab size {vocab_size:,}: the corpus yields only {tok.vocab_size:,} {algorithm} tokens (special "
            f"tokens included), so the vocabulary is that size; ask for at most {tok.vocab_size:,} or give "
            "more text",
            stacklevel=2,
        )
    return tok
