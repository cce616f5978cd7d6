"""Added tokens ([MASK], <s>, user tokens): matched in the text before the pipeline runs, never split.

An `AddedVocabulary` keeps the added tokens with their ids and cuts a text at their matches:
tokens with normalized=False are found in the raw text, the others in the normalized text.

    >>> vocab = AddedVocabulary()
    >>> vocab.add([AddedToken("[MASK]", special=True)], lambda t: None, 10)
    1
    >>> [(ns.normalized, t and t.content) for ns, t in vocab.split("a [MASK] b", None)]
    [('a ', None), ('[MASK]', '[MASK]'), (' b', None)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import regex

from .normalized_string import WHITESPACE_CHARS, NormalizedString, Normalizer


@dataclass
class AddedToken:
    """A token matched in the raw text before the pipeline runs, and never split.

    normalized=None means "match on normalized text unless special" (the `tokenizers` default).
    """

    content: str
    special: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool | None = None

    def __post_init__(self):
        if self.normalized is None:
            self.normalized = not self.special

    @classmethod
    def coerce(cls, token, special: bool = False) -> "AddedToken":
        """An AddedToken from a str, an AddedToken, or a `tokenizers.AddedToken` (duck-typed).
        Made special, a token matches the raw text (normalized=False)."""
        if isinstance(token, str):
            return cls(token, special=special)
        if isinstance(token, cls) and not (special and not token.special):
            return token
        is_special = special or bool(getattr(token, "special", False))
        return cls(
            token.content,
            is_special,
            token.single_word,
            token.lstrip,
            token.rstrip,
            False if is_special else token.normalized,
        )


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _alternation(contents) -> "regex.Pattern | None":
    """One pattern matching any of contents, longest first (so '[MASK]x' beats '[MASK]')."""
    contents = sorted(set(c for c in contents if c), key=len, reverse=True)
    return regex.compile("|".join(regex.escape(c) for c in contents)) if contents else None


def find_added(
    s: str, pattern: "regex.Pattern", by_text: dict[str, AddedToken]
) -> list[tuple[int, int, AddedToken | None]]:
    """Cut s into (start, end, token or None) parts at the matches of pattern (leftmost longest),
    honouring each token's single_word / lstrip / rstrip.

    >>> t = AddedToken("<m>", lstrip=True)
    >>> find_added("a  <m>b", regex.compile("<m>"), {"<m>": t})
    [(0, 1, None), (1, 6, AddedToken(content='<m>', special=False, single_word=False, lstrip=True, rstrip=False, normalized=True)), (6, 7, None)]
    """
    parts, pos = [], 0
    for m in pattern.finditer(s):
        a, b = m.span()
        if a < pos:
            continue  # swallowed by the previous token's rstrip
        tok = by_text[m.group()]
        if tok.single_word and ((a > 0 and _is_word_char(s[a - 1])) or (b < len(s) and _is_word_char(s[b]))):
            continue
        if tok.lstrip:
            while a > pos and s[a - 1] in WHITESPACE_CHARS:
                a -= 1
        if tok.rstrip:
            while b < len(s) and s[b] in WHITESPACE_CHARS:
                b += 1
        if pos < a:
            parts.append((pos, a, None))
        parts.append((a, b, tok))
        pos = b
    if pos < len(s):
        parts.append((pos, len(s), None))
    return parts


class AddedVocabulary:
    """The added tokens of a Tokenizer: their ids, and the matchers that cut them out of a text."""

    def __init__(self):
        self.tokens: list[AddedToken] = []
        self.ids: dict[str, int] = {}  # content -> id
        self.contents: dict[int, str] = {}  # id -> content
        # alternations of the raw-matched / normalized-matched tokens (None: there are none)
        self.raw_pattern = self.normalized_pattern = None
        self._raw_map: dict[str, AddedToken] = {}
        self._norm_map: dict[str, AddedToken] = {}  # normalized form -> token

    def __bool__(self):
        return bool(self.tokens)

    def add(
        self,
        tokens,
        model_id: Callable[[str], int | None],
        model_size: int,
        special: bool = False,
        ids: list[int] | None = None,
        normalizer: Normalizer | None = None,
    ) -> int:
        """Add tokens (str or AddedToken); returns how many were new. An id is ids[k] when given,
        else the model's (model_id(content)), else the next free id after everything there."""
        added = 0
        for k, tok in enumerate(tokens):
            tok = AddedToken.coerce(tok, special)
            if not tok.content:
                raise ValueError("an added token cannot be empty")
            if tok.content in self.ids:
                for i, old in enumerate(self.tokens):  # same content: the new flags win
                    if old.content == tok.content:
                        self.tokens[i] = tok
                continue
            if ids is not None:
                new_id = ids[k]
            else:
                new_id = model_id(tok.content)
                if new_id is None:
                    new_id = max([model_size - 1, *self.contents], default=-1) + 1
            self.tokens.append(tok)
            self.ids[tok.content] = new_id
            self.contents[new_id] = tok.content
            added += 1
        self.refresh(normalizer)
        return added

    def refresh(self, normalizer: Normalizer | None) -> None:
        """Rebuild the matchers; normalized tokens are matched in their normalized form."""

        def form(t: AddedToken) -> str:
            return normalizer.normalize_str(t.content) if normalizer is not None else t.content

        self._raw_map = {t.content: t for t in self.tokens if not t.normalized}
        self._norm_map = {form(t): t for t in self.tokens if t.normalized}
        self.raw_pattern = _alternation(self._raw_map)
        self.normalized_pattern = _alternation(self._norm_map)

    def split(self, text: str, normalizer: Normalizer | None) -> list[tuple[NormalizedString, AddedToken | None]]:
        """text as pieces: each added token (with its token), the rest normalized piece by piece
        (with None). Pieces the normalizer empties are dropped."""
        if self.raw_pattern is not None and self.raw_pattern.search(text):
            raw = [
                (NormalizedString(text, text[a:b], None, a), t)
                for a, b, t in find_added(text, self.raw_pattern, self._raw_map)
            ]
        else:
            raw = [(NormalizedString(text), None)]
        out = []
        for ns, tok in raw:
            if tok is not None:
                out.append((ns, tok))
                continue
            if normalizer is not None:
                normalizer.normalize(ns)
            if not ns.normalized:
                continue
            if self.normalized_pattern is not None and self.normalized_pattern.search(ns.normalized):
                for a, b, t in find_added(ns.normalized, self.normalized_pattern, self._norm_map):
                    out.append((ns.slice(a, b), t))
            else:
                out.append((ns, None))
        return out
