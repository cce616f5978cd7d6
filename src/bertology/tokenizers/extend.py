"""Vocabulary extension (`pretrain --init DIR --extend-vocab N`): the pieces a domain needs, added to a
checkpoint's tokenizer at the next ids.

The family's tokenizer kind is trained on the corpus (its text normalized as the checkpoint's tokenizer
normalizes it), and the N most frequent of its word-initial pieces that the checkpoint's tokenizer splits
into two pieces or more are added to the checkpoint's vocabulary (WordPiece and Unigram: one entry each;
byte-level BPE: the merges that build the piece from the checkpoint's pieces, an intermediate piece
counting as one of the N). Each new id follows the old ones and records its old pieces, whose rows
models/resize.py averages into the new row.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..io import iter_files
from .corpus import count_words_in_files
from .tokenizer import Tokenizer
from .training import train


@dataclass
class Extension:
    """What --extend-vocab added: the new pieces (in id order), each new id's old pieces, and the
    tokens per word of the corpus before and after."""

    tokenizer: Tokenizer
    pieces: list[str]
    old_ids: list[list[int]]  # per new id, the checkpoint's ids of its pieces
    base: int  # the first new id (the checkpoint's vocabulary size)
    tokens_per_word_before: float
    tokens_per_word_after: float
    counts: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict:
        return {
            "added": len(self.pieces),
            "first_id": self.base,
            "pieces": self.pieces[:50],
            "tokens_per_word_before": self.tokens_per_word_before,
            "tokens_per_word_after": self.tokens_per_word_after,
            "init": "mean of the checkpoint's rows of the piece's old pieces",
        }

    def __str__(self) -> str:
        shown = ", ".join(self.pieces[:10]) + (", …" if len(self.pieces) > 10 else "")
        return (
            f"--extend-vocab: {len(self.pieces)} pieces added (ids {self.base}…{self.base + len(self.pieces) - 1}: "
            f"{shown}), each row the mean of its old pieces' rows; the corpus tokenizes to "
            f"{self.tokens_per_word_before:.3f} → {self.tokens_per_word_after:.3f} tokens per word"
        )


def _word_start(piece: str, model_json: dict) -> bool:
    """A piece that begins a word: no WordPiece continuation prefix (a SentencePiece ▁ or byte-level Ġ piece
    is word-initial when it carries the mark; pieces inside words are left alone)."""
    kind = model_json["type"]
    if kind == "WordPiece":
        return not piece.startswith(model_json.get("continuing_subword_prefix") or "##")
    return piece.startswith(("▁", "Ġ"))


def tokens_per_word(tok: Tokenizer, words: dict[str, int]) -> float:
    """Σ count × pieces of each pre-tokenized word / Σ count (special tokens not counted)."""
    total = sum(words.values())
    return sum(c * len(tok.model.tokenize(w)) for w, c in words.items()) / max(1, total)


def choose_pieces(old: Tokenizer, domain: Tokenizer, words: dict[str, int], n: int) -> list[tuple[str, list[int], int]]:
    """The n most frequent word-initial pieces of the `domain` tokenizer over `words` (the corpus's
    pre-tokenized words and counts, as `old` normalizes them) that `old` lacks and splits into ≥ 2
    pieces: (piece, its old ids, its count), most frequent first (ties by the piece)."""
    spec = old.model.to_json()
    counts: Counter[str] = Counter()
    for w, c in words.items():
        pieces = domain.model.tokenize(w)
        if pieces:
            counts[pieces[0].value] += c
    normalize = old.normalizer.normalize_str if old.normalizer is not None else (lambda s: s)
    chosen = []
    for piece, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(chosen) == n:
            break
        if old.token_to_id(piece) is not None or not _word_start(piece, spec) or normalize(piece) != piece:
            continue
        split = old.model.tokenize(piece)
        if len(split) >= 2 and all(t.id is not None for t in split):
            chosen.append((piece, [t.id for t in split], c))
    return chosen


def extended_tokenizer(
    old: Tokenizer, chosen: list[tuple[str, list[int], int]], base: int
) -> tuple[Tokenizer, list[str], list[list[int]]]:
    """`old` with the chosen pieces at ids base, base+1, …; returns it, the new pieces in id order and
    each one's old ids (byte-level BPE adds the intermediate pieces of each merge chain too)."""
    data = old.to_json()
    model = data["model"]
    pieces, old_ids = [], []
    kind = model["type"]
    if kind == "WordPiece":
        for piece, ids, _ in chosen:
            model["vocab"][piece] = base + len(pieces)
            pieces.append(piece)
            old_ids.append(ids)
    elif kind == "Unigram":
        if len(model["vocab"]) != base:
            raise ValueError(
                f"--extend-vocab: the Unigram vocabulary has {len(model['vocab'])} pieces but the "
                f"embedding table {base} rows; new pieces would not get the next ids"
            )
        scores = [s for _, s in model["vocab"]]
        for piece, ids, _ in chosen:
            # its old pieces' summed score plus a margin per piece saved: Viterbi takes the new piece wherever
            # its span would otherwise be those pieces, or other new pieces (each saves fewer)
            model["vocab"].append([piece, sum(scores[i] for i in ids if i < len(scores)) + 0.5 * (len(ids) - 1)])
            pieces.append(piece)
            old_ids.append(ids)
    elif kind == "BPE":
        vocab, merges = model["vocab"], model["merges"]
        n = len(chosen)
        for piece, ids, _ in chosen:
            parts = [old.id_to_token(i) for i in ids]
            chain = [parts[0]]
            for part in parts[1:]:
                chain.append(chain[-1] + part)  # each merge builds the next prefix of the piece
            needed = [c for c in chain[1:] if c not in vocab]
            if len(pieces) + len(needed) > n:  # an intermediate piece counts as one of the n
                continue
            for left, part, merged in zip(chain, parts[1:], chain[1:]):
                merges.append([left, part])  # ranked after every old merge: old words split as before
                if merged not in vocab:
                    vocab[merged] = base + len(pieces)
                    pieces.append(merged)
                    old_ids.append([t.id for t in old.model.tokenize(merged)])
    else:
        raise ValueError(f"--extend-vocab: a {kind} tokenizer cannot be extended")
    tok = Tokenizer.from_json(data)
    for piece, i in zip(pieces, range(base, base + len(pieces))):
        if tok.token_to_id(piece) != i:
            raise ValueError(
                f"--extend-vocab: {piece!r} would get id {tok.token_to_id(piece)}, not {i}; the "
                "tokenizer's ids are not contiguous with the embedding table"
            )
    return tok, pieces, old_ids


def extend_vocabulary(
    old: Tokenizer,
    corpus: list[str],
    n: int,
    kind: str,
    base: int,
    vocab_size: int | None = None,
    show_progress: bool = False,
    where: str | None = None,
    **kind_options,
) -> Extension:
    """Train a tokenizer of `kind` (training.KINDS: the family's) on `corpus` (normalized as `old`
    normalizes) with `vocab_size` pieces (default: as many as `old`), choose up to n new pieces and build
    the extended tokenizer. `where` names the corpus in messages (default its files)."""
    normalize = old.normalizer.normalize_str if old.normalizer is not None else None
    lines = (normalize(line) if normalize else line for line in iter_files(corpus))
    domain = train(
        lines=lines,
        family=kind,
        vocab_size=vocab_size or old.vocab_size,
        show_progress=show_progress,
        **kind_options,
    )
    words = count_words_in_files(corpus, old.normalizer, old.pre_tokenizer, show_progress=show_progress)
    chosen = choose_pieces(old, domain, words, n)
    if not chosen:
        raise ValueError(
            f"--extend-vocab {n}: no piece of the tokenizer trained on {where or ', '.join(corpus)} is new to "
            "the checkpoint's vocabulary; the corpus needs no extension"
        )
    tok, pieces, old_ids = extended_tokenizer(old, chosen, base)
    tok.no_truncation()
    tok.no_padding()
    return Extension(
        tok,
        pieces,
        old_ids,
        base,
        tokens_per_word(old, words),
        tokens_per_word(tok, words),
        {p: c for p, _, c in chosen},
    )
