"""WordPiece (BERT): greedy longest-match-first, continuation pieces marked '##'.

>>> wp = WordPiece({"[UNK]": 0, "un": 1, "##want": 2, "##ed": 3, "runn": 4, "##ing": 5})
>>> [t.value for t in wp.tokenize("unwanted")]
['un', '##want', '##ed']
>>> [t.value for t in wp.tokenize("unwantedx")]   # not coverable: the whole word is unknown
['[UNK]']
"""

from __future__ import annotations

from .base import DictVocabModel, Token


def greedy_longest_match(
    word: str, vocab: dict, prefix: str = "##", max_piece_chars: int | None = None
) -> list[tuple[str, int, int]] | None:
    """Split word into the longest vocabulary pieces from the left; None if impossible.

    >>> greedy_longest_match("unaffable", {"un": 0, "##aff": 1, "##able": 2})
    [('un', 0, 2), ('##aff', 2, 5), ('##able', 5, 9)]
    """
    n = len(word)
    limit = max_piece_chars or n
    pieces, start = [], 0
    while start < n:
        end = min(n, start + limit)
        while end > start:
            piece = word[start:end] if start == 0 else prefix + word[start:end]
            if piece in vocab:
                pieces.append((piece, start, end))
                break
            end -= 1
        else:
            return None
        start = end
    return pieces


class WordPiece(DictVocabModel):
    def __init__(
        self,
        vocab: dict[str, int],
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
    ):
        self.vocab = dict(vocab)
        self.vocab_r = {i: t for t, i in self.vocab.items()}
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        # The longest piece bounds the inner search (a piece "##abc" matches 3 word chars).
        p = len(continuing_subword_prefix)
        self._max_piece = (
            max((len(t) - p if t.startswith(continuing_subword_prefix) else len(t) for t in self.vocab), default=1) or 1
        )

    def _unk(self, word: str) -> list[Token]:
        uid = self.vocab.get(self.unk_token)
        if uid is None:
            raise KeyError(
                f"WordPiece: unknown token {self.unk_token!r} is missing from the vocabulary "
                f"(needed for word {word[:50]!r})"
            )
        return [Token(uid, self.unk_token, (0, len(word)))]

    def tokenize(self, sequence: str) -> list[Token]:
        # (no cache here: the fast encoder memoizes words, see fast/words.py)
        if len(sequence) > self.max_input_chars_per_word:
            return self._unk(sequence)
        pieces = greedy_longest_match(sequence, self.vocab, self.continuing_subword_prefix, self._max_piece)
        if pieces is None:
            return self._unk(sequence)
        vocab = self.vocab
        return [Token(vocab[p], p, (a, b)) for p, a, b in pieces]

    def to_json(self):
        return {
            "type": "WordPiece",
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
        }

    @classmethod
    def from_json(cls, data):
        return cls(
            data["vocab"],
            data.get("unk_token", "[UNK]"),
            data.get("continuing_subword_prefix", "##"),
            data.get("max_input_chars_per_word", 100),
        )

    @classmethod
    def from_vocab_txt(cls, path, **kw) -> "WordPiece":
        """BERT's vocab.txt: one token per line, the id is the line number.

        A token on two lines is an error (`tokenizers` silently keeps the later id, leaving the
        earlier one an embedding row no text can reach); so is a file that is not UTF-8.
        """
        vocab: dict[str, int] = {}
        try:
            with open(path, encoding="utf-8") as f:
                for i, line in enumerate(f):
                    token = line.rstrip()
                    if token in vocab:
                        raise ValueError(
                            f"{path}:{i + 1}: {token!r} is already on line {vocab[token] + 1}; each "
                            "token of a vocab.txt takes one line (its id is the line number)"
                        )
                    vocab[token] = i
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        if not vocab:
            raise ValueError(f"{path}: empty vocabulary file")
        return cls(vocab, **kw)
