"""The contract every tokenization model (BPE, WordPiece, Unigram) fulfils.

A model sees one pre-token at a time (a word, already normalised and split) and returns its
sub-tokens with character offsets *relative to that pre-token*; the Tokenizer maps them back to
the original text.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple


class Token(NamedTuple):
    id: int
    value: str
    offsets: tuple[int, int]  # [start, end) in the pre-token string


class Model(ABC):
    """A subword model: vocabulary plus the rule that splits a word into vocabulary items."""

    @abstractmethod
    def tokenize(self, sequence: str) -> list[Token]: ...

    @abstractmethod
    def token_to_id(self, token: str) -> int | None: ...

    @abstractmethod
    def id_to_token(self, id: int) -> str | None: ...

    @abstractmethod
    def get_vocab(self) -> dict[str, int]: ...

    @property
    def vocab_size(self) -> int:
        return len(self.get_vocab())

    @abstractmethod
    def to_json(self) -> dict:
        """The `model` object of a Hugging Face tokenizer.json (with its `type` key)."""

    @classmethod
    @abstractmethod
    def from_json(cls, data: dict) -> "Model": ...


class DictVocabModel(Model):
    """A model whose vocabulary is a token → id dict (`self.vocab`) and its inverse (`self.vocab_r`)."""

    vocab: dict[str, int]
    vocab_r: dict[int, str]

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        return self.vocab_r.get(id)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)


def component_from_json(stage: str, registry: dict, data, kind: str | None = None):
    """Build a pipeline component from its tokenizer.json object: registry maps its "type"
    (or `kind`) to the class whose from_json reads it."""
    if kind is None:
        kind = data.get("type") if isinstance(data, dict) else None
    if kind not in registry:
        raise ValueError(f"{stage}: unknown type {kind!r}; known: {sorted(registry)}")
    cls = registry[kind]
    try:
        return cls.from_json(data)
    except KeyError as e:
        raise ValueError(f"{stage} {kind!r}: missing key {e.args[0]!r}") from None
