"""Word vectors by word, as gensim's KeyedVectors: nearest neighbours by cosine, 3CosAdd analogies,
and the word2vec text and binary formats (the files gensim's `load_word2vec_format` reads, and
the ones it writes, read here).

    >>> kv = KeyedVectors(["king", "queen", "man", "woman"],
    ...                   np.array([[1, 1], [1, -1], [2, 1.1], [2, -0.9]], dtype=np.float32))
    >>> kv.analogy("man", "king", "woman")            # man : king :: woman : ?
    'queen'

The arithmetic follows gensim's step by step (float32 unit vectors, the weighted mean normalised,
dot products divided by the row norms), so scores computed from the same vectors agree with
gensim's and the evaluation protocol of `evaluate.py` gives the same numbers.
"""

from __future__ import annotations

import os
from typing import Iterable

import numpy as np

from ..io import atomic_path


def unit(vector: np.ndarray) -> np.ndarray:
    """The vector scaled to length 1 in float32 (unchanged if it is zero), as gensim's unitvec."""
    length = np.sqrt(np.dot(vector, vector))
    return vector if length == 0 else (vector * np.float32(1.0 / float(length))).astype(vector.dtype)


class KeyedVectors:
    def __init__(self, words: list[str], vectors: np.ndarray, counts: np.ndarray | None = None):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(words) != len(vectors):
            raise ValueError(f"{len(words)} words for vectors of shape {vectors.shape}")
        self.index_to_key = list(words)
        self.key_to_index = {w: i for i, w in enumerate(self.index_to_key)}
        if len(self.key_to_index) != len(self.index_to_key):
            raise ValueError("duplicate words")
        self.vectors = vectors
        self.counts = counts
        self._norms: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, word: str) -> bool:
        return word in self.key_to_index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self.index(word)]

    @property
    def vector_size(self) -> int:
        return self.vectors.shape[1]

    @property
    def norms(self) -> np.ndarray:
        if self._norms is None:
            self._norms = np.linalg.norm(self.vectors, axis=1)
        return self._norms

    def index(self, word: str) -> int:
        try:
            return self.key_to_index[word]
        except KeyError:
            raise KeyError(f"word {word!r} not in the vocabulary ({len(self)} words)") from None

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words."""
        return float(np.dot(unit(self[a]), unit(self[b])))

    def nearest(
        self, positive: list[int], negative: list[int] = (), topn: int = 10, restrict_vocab: int | None = None
    ) -> list[tuple[int, float]]:
        """(index, cosine) of the `topn` words nearest to the mean of the unit vectors of `positive`
        minus those of `negative` (3CosAdd), the query words excluded; only the first
        `restrict_vocab` words (the most frequent) are candidates."""
        if not positive and not negative:
            raise ValueError("nearest: give at least one word")
        mean = np.zeros(self.vector_size, np.float32)
        for i, weight in [(i, np.float32(1.0)) for i in positive] + [(i, np.float32(-1.0)) for i in negative]:
            mean += weight * (self.vectors[i] / self.norms[i])
        mean = unit(mean / np.float32(len(positive) + len(negative)))
        end = len(self) if restrict_vocab is None else restrict_vocab
        dists = np.dot(self.vectors[:end], mean) / self.norms[:end]
        query = set(positive) | set(negative)
        wanted = min(topn + len(query), len(dists))
        if wanted >= len(dists):
            best = np.argsort(-dists)[:wanted]
        else:  # a partial sort first, as gensim's matutils.argsort (same order among ties)
            top = np.argpartition(-dists, wanted)[:wanted]
            best = top.take(np.argsort((-dists).take(top)))
        return [(int(i), float(dists[i])) for i in best if int(i) not in query][:topn]

    def most_similar(
        self,
        positive: str | Iterable[str] = (),
        negative: Iterable[str] = (),
        topn: int = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]]:
        """The `topn` (word, cosine) nearest to sum(positive) - sum(negative) of unit vectors."""
        positive = [positive] if isinstance(positive, str) else list(positive)
        found = self.nearest([self.index(w) for w in positive], [self.index(w) for w in negative], topn, restrict_vocab)
        return [(self.index_to_key[i], score) for i, score in found]

    def analogy(self, a: str, b: str, c: str, restrict_vocab: int | None = None) -> str:
        """a : b :: c : ?, the word nearest to b - a + c (3CosAdd), a, b, c excluded."""
        return self.most_similar([b, c], [a], topn=1, restrict_vocab=restrict_vocab)[0][0]

    # --- word2vec formats -------------------------------------------------------------------

    def save(self, path: str | os.PathLike, binary: bool | None = None) -> None:
        """Write the word2vec text format ("V D" header, then "word v1 … vD" per line, 9 significant
        digits: float32 exactly) or, with binary (default: a name ending in .bin), the binary one
        (header, then per word "word " and D little-endian float32, then a newline, as the C tool)."""
        binary = os.fspath(path).endswith(".bin") if binary is None else binary
        for w in self.index_to_key:
            if not w or any(ch.isspace() for ch in w):
                raise ValueError(
                    f"{os.fspath(path)}: word {w!r} is empty or holds whitespace; the word2vec format cannot store it"
                )
        header = f"{len(self)} {self.vector_size}\n".encode()
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            f.write(header)
            if binary:
                rows = self.vectors.astype("<f4")
                for w, row in zip(self.index_to_key, rows):
                    f.write(w.encode("utf-8") + b" " + row.tobytes() + b"\n")
            else:
                for start in range(0, len(self), 4096):
                    block = self.vectors[start : start + 4096]
                    lines = [
                        w + " " + " ".join(["%.9g" % v for v in row])
                        for w, row in zip(self.index_to_key[start : start + 4096], block.tolist())
                    ]
                    f.write(("\n".join(lines) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike, binary: bool | None = None) -> "KeyedVectors":
        """Read a word2vec text or binary file (binary: default from a .bin name). A bad header,
        a row of the wrong length, a repeated word, a short file or bytes that are not UTF-8 raise
        ValueError naming the file and the line (text) or word (binary)."""
        path = os.fspath(path)
        binary = path.endswith(".bin") if binary is None else binary
        with open(path, "rb") as f:
            data = f.read()
        end = data.find(b"\n")
        header = data[: end if end >= 0 else len(data)]
        try:
            n, size = (int(x) for x in header.split())
            if n < 0 or size < 1:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"{path}: line 1: header {header[:80]!r} is not '<number of words> <dimensions>'"
            ) from None
        body = data[end + 1 :]
        words, vectors = (_parse_binary if binary else _parse_text)(path, body, n, size)
        seen: dict[str, int] = {}
        for i, w in enumerate(words):
            if w in seen:
                raise ValueError(f"{path}: word {w!r} appears twice (entries {seen[w] + 1} and {i + 1})")
            seen[w] = i
        return cls(words, vectors)


def _parse_text(path: str, body: bytes, n: int, size: int) -> tuple[list[str], np.ndarray]:
    lines = body.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) != n:
        raise ValueError(f"{path}: the header says {n} words, the file has {len(lines)} lines after it")
    words, vectors = [], np.empty((n, size), np.float32)
    for i, raw in enumerate(lines):
        try:
            parts = raw.decode("utf-8").rstrip().split(" ")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: line {i + 2}: invalid UTF-8 byte(s) {raw[e.start : e.end]!r}") from None
        if len(parts) != size + 1:
            raise ValueError(f"{path}: line {i + 2}: {len(parts) - 1} numbers after the word, the header says {size}")
        try:
            vectors[i] = [float(x) for x in parts[1:]]
        except ValueError:
            raise ValueError(f"{path}: line {i + 2}: word {parts[0]!r}: a value is not a number") from None
        words.append(parts[0])
    return words, vectors


def _parse_binary(path: str, body: bytes, n: int, size: int) -> tuple[list[str], np.ndarray]:
    words, vectors = [], np.empty((n, size), np.float32)
    pos, width = 0, 4 * size
    for i in range(n):
        while pos < len(body) and body[pos : pos + 1] == b"\n":  # the C tool ends each vector with a newline
            pos += 1
        space = body.find(b" ", pos)
        if space < 0 or space + 1 + width > len(body):
            raise ValueError(f"{path}: the header says {n} words of {size} dimensions, the file ends in word {i + 1}")
        try:
            word = body[pos:space].decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{path}: word {i + 1}: {body[pos:space][:40]!r} is not UTF-8") from None
        words.append(word)
        vectors[i] = np.frombuffer(body, dtype="<f4", count=size, offset=space + 1)
        pos = space + 1 + width
    if body[pos:].strip(b"\n"):
        raise ValueError(f"{path}: {len(body) - pos} bytes after the {n} words the header announces")
    return words, vectors
