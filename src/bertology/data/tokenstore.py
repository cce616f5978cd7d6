"""The token store: each corpus file tokenized once, by worker processes, into a few flat arrays.

One directory per corpus file (arrays.py's conventions: raw little-endian arrays + meta.json,
built in a temporary directory renamed into place):

    ids.bin           (tokens,)            uint16 where every id of the vocabulary fits, else uint32
    starts.bin        (ceil(tokens / 8),)  uint8: one bit per token, set where a word starts
                                           (little bit order: token t is bit t % 8 of byte t // 8);
                                           or, where each id either always or never starts a word
                                           (WordPiece's ## pieces, SentencePiece's ▁ ones), instead
    start_ids.bin     (ceil(vocabulary / 8),) uint8: one bit per id, set where it starts a word
    sent_offsets.bin  (sentences + 1,)     token offset of each sentence, then the total
    doc_offsets.bin   (documents + 1,)     sentence offset of each document, then the total
    id_counts.bin     (vocabulary,)        int64: how often each id occurs (the unigram prior's counts,
                                           counted as the chunks are written; absent in older stores)

The directory is `<root>/tokens-<tokenizer hash>/<file name>-<file key>`: the tokenizer hash is
that of its tokenizer.json text, the file key that of the file's fingerprint (absolute path, size,
modification time) and how it is read (format, errors). A table's key also holds the column read, and
a datasets directory's fingerprint is that of the files in it (state.json and its shards). Every run
and every family with the same tokenizer finds the stores there, and a corpus of several files that
gains one tokenizes only the new file. `root` is the caller's cache directory, or $BERTOLOGY_TOKEN_CACHE when set: one place
shared by all runs on the machine (a run's own cache/ goes away with the run); the sample indices
over the stores (build.py) go to the same place.

Tokenizing is the one stage that grows with the corpus, so it runs on every core: the main process
streams documents (corpus.iter_documents) in chunks of about CHUNK_CHARS characters to forked
workers, at most two chunks per worker in flight (memory stays bounded), and writes the results in
the order the documents came, so the store is the same whatever the number of workers.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import tempfile
from collections import OrderedDict, deque
from itertools import chain
from pathlib import Path
from typing import Iterator

import numpy as np

from ..tables import DEFAULT_TEXT_COLUMN, table_format
from .arrays import build_cached, digest, open_arrays
from .corpus import bytes_bar, iter_documents

WORD_STARTS = "word_ids"  # where word starts come from: the encodings' word_ids (earlier: guessed from token strings)
TOKENS_LAYOUT = 2  # 2: one store per file, uint16/uint32 ids, word starts as bits (1: one int32 store per corpus)
CHUNK_CHARS = 1 << 20  # characters of text a worker encodes at once
CACHE_ENV = "BERTOLOGY_TOKEN_CACHE"
READ_BYTES = 1 << 28  # the most one read asks for
RUN_GAP = 1 << 12  # positions this close are read as one run (FileTokens.take): one read, not two


def tokenizer_hash(tokenizer) -> str:
    """The hash of the tokenizer's tokenizer.json text: the key every store of its ids lives under."""
    return hashlib.sha256(tokenizer.to_str().encode()).hexdigest()[:16]


def _fingerprint(path: str) -> list:
    """[absolute path, size, mtime] of a file; of a datasets directory, those of the files in it (a dataset
    saved again over the same directory rewrites them, which the directory's own mtime would not show)."""
    if not os.path.isdir(path):
        st = os.stat(path)
        return [os.path.abspath(path), st.st_size, st.st_mtime_ns]
    files = sorted(f for f in os.listdir(path) if os.path.isfile(os.path.join(path, f)))
    return [_fingerprint(os.path.join(path, f)) for f in files]


def file_key(path: str, format: str, errors: str, text_column: str = DEFAULT_TEXT_COLUMN) -> str:
    """The key of one file's store: its fingerprint (absolute path, size, mtime) and how it is read."""
    key = {
        "file": _fingerprint(path),
        "format": format,
        "errors": errors,
        "word_starts": WORD_STARTS,
        "layout": TOKENS_LAYOUT,
    }
    if table_format(path):  # only tables: a text file's key (and so its store) stays what it was
        key["text_column"] = text_column
    return digest(key)


def token_cache_root(cache_dir: str | os.PathLike) -> Path:
    """Where token stores go: $BERTOLOGY_TOKEN_CACHE when set (shared by every run), else `cache_dir`."""
    shared = os.environ.get(CACHE_ENV)
    return Path(shared) if shared else Path(cache_dir)


def id_dtype(tokenizer) -> str:
    """uint16 when every id of the vocabulary (added tokens included) fits in it, else uint32."""
    top = max(tokenizer.get_vocab().values(), default=0)
    return "uint16" if top < 1 << 16 else "uint32"


def store_dirs(
    files: list[str], tokenizer, root: Path, format: str, errors: str, text_column: str = DEFAULT_TEXT_COLUMN
) -> list[Path]:
    """The store directory of each file (built or not)."""
    base = Path(root) / f"tokens-{tokenizer_hash(tokenizer)}"
    return [base / f"{Path(f).name[:40]}-{file_key(f, format, errors, text_column)}" for f in files]


# ---- one chunk of documents, in a worker ----------------------------------------------------------


def encode_documents(tokenizer, documents: list[list[str]], dtype: str):
    """Documents (lists of sentences) -> (ids, word starts (bool), sentence lengths, sentences per
    document): sentences of no token and documents of no sentence left out, as the corpus reader
    would find them again the same way.

    >>> from bertology.tokenizers import train
    >>> tok = train(lines=["a cat sat", "the cats sat"], family="bert", vocab_size=19, show_progress=False)
    >>> ids, starts, lengths, per_doc = encode_documents(tok, [["cats sat"], ["", "a"]], "uint16")
    >>> starts.tolist(), lengths.tolist(), per_doc.tolist()
    ([True, False, True, True], [3, 1], [1, 1])
    """
    sentences = list(chain.from_iterable(documents))
    # ids and word sizes alone (Tokenizer.encode_batch_ids): no token strings, offsets or
    # Encodings, which a store would drop; the same tokens as encode_sequence's
    batch = tokenizer.encode_batch_ids(sentences)
    ids = np.array(batch.ids, dtype=np.int64)
    lengths = np.array(batch.lengths, dtype=np.int64)  # (sentences,)
    total = len(ids)
    if total and ids.max() >= np.iinfo(dtype).max + 1:
        raise ValueError(f"token id {int(ids.max())} does not fit the store's {dtype}")
    # a token starts a word where its word begins: the running sum of the word sizes (a word never
    # crosses sentences, so a sentence's first token is one): instances.word_starts, vectorised
    word_ends = np.cumsum(np.array(batch.word_sizes, dtype=np.int64))
    if (word_ends[-1] if len(word_ends) else 0) != total:
        raise RuntimeError(f"encode_batch_ids: {total} ids but words of {int(word_ends[-1:].sum())} tokens")
    starts = np.zeros(total, bool)
    starts[word_ends[:-1]] = True
    starts[:1] = True
    kept = lengths > 0
    first = np.cumsum([0] + [len(d) for d in documents[:-1]])
    per_doc = np.add.reduceat(kept, first) if len(documents) else np.zeros(0, np.int64)
    return ids.astype(dtype), starts, lengths[kept], per_doc[per_doc > 0]


_worker_tokenizer = None  # the tokenizer of a forked worker (set by its initializer, read by _encode)


def _init_worker(tokenizer) -> None:
    global _worker_tokenizer
    _worker_tokenizer = tokenizer


def _encode(documents, dtype):
    return encode_documents(_worker_tokenizer, documents, dtype)


def _chunks(path: str, format: str, errors: str, text_column: str):
    """(documents, characters) of about CHUNK_CHARS characters, in the file's order."""
    docs, chars = [], 0
    for doc in iter_documents([path], format, errors, text_column):
        docs.append(doc)
        chars += sum(map(len, doc)) + len(doc)
        if chars >= CHUNK_CHARS:
            yield docs, chars
            docs, chars = [], 0
    if docs:
        yield docs, chars


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _encoded(path: str, tokenizer, dtype: str, format: str, errors: str, text_column: str, workers: int, bar):
    """The chunks of `path` encoded, in order: by `workers` forked processes, or here when 1."""
    if workers <= 1 or "fork" not in mp.get_all_start_methods() or mp.current_process().daemon:
        for docs, chars in _chunks(path, format, errors, text_column):
            yield encode_documents(tokenizer, docs, dtype)
            bar.update(chars)
        return
    with mp.get_context("fork").Pool(workers, initializer=_init_worker, initargs=(tokenizer,)) as pool:
        pending: deque = deque()
        for docs, chars in _chunks(path, format, errors, text_column):
            pending.append((pool.apply_async(_encode, (docs, dtype)), chars))
            if len(pending) >= 2 * workers:  # bounded: the reader waits for the oldest chunk
                result, n = pending.popleft()
                yield result.get()
                bar.update(n)
        while pending:
            result, n = pending.popleft()
            yield result.get()
            bar.update(n)


class _BitWriter:
    """Bits appended to a file, packed 8 to a byte (little bit order), the remainder carried."""

    def __init__(self, f):
        self.f, self.carry, self.n = f, np.zeros(0, bool), 0

    def write(self, bits: np.ndarray) -> None:
        bits = np.concatenate([self.carry, bits])
        whole = len(bits) // 8 * 8
        self.f.write(np.packbits(bits[:whole], bitorder="little").tobytes())
        self.carry, self.n = bits[whole:], self.n + whole // 8

    def close(self) -> int:
        if len(self.carry):
            self.f.write(np.packbits(self.carry, bitorder="little").tobytes())
            self.n += 1
        return self.n


def build_file_store(
    tmp: Path,
    path: str,
    tokenizer,
    format: str,
    errors: str,
    workers: int,
    bar,
    text_column: str = DEFAULT_TEXT_COLUMN,
) -> dict:
    """Tokenize one corpus file (or table) into `tmp` (see the module docstring); returns its meta."""
    dtype = id_dtype(tokenizer)
    n_tokens, n_sents, n_docs = 0, 0, 0
    id_counts = np.zeros(max(tokenizer.get_vocab().values(), default=0) + 1, np.int64)
    # (ids seen starting a word, ids seen inside one: where none is both, the ids say where words start)
    seen_start, seen_inside = np.zeros(len(id_counts), bool), np.zeros(len(id_counts), bool)
    with (
        open(tmp / "ids.bin", "wb") as f_ids,
        open(tmp / "starts.bin", "wb") as f_starts,
        open(tmp / "sent_offsets.bin", "wb") as f_sents,
        open(tmp / "doc_offsets.bin", "wb") as f_docs,
    ):
        bits = _BitWriter(f_starts)
        f_sents.write(np.zeros(1, np.int64).tobytes())
        f_docs.write(np.zeros(1, np.int64).tobytes())
        for ids, starts, lengths, per_doc in _encoded(
            path, tokenizer, dtype, format, errors, text_column, workers, bar
        ):
            f_ids.write(ids.tobytes())
            if len(ids):
                id_counts += np.bincount(ids, minlength=len(id_counts))
                seen_start[ids[starts]], seen_inside[ids[~starts]] = True, True
            bits.write(starts)
            f_sents.write((n_tokens + np.cumsum(lengths)).tobytes())
            f_docs.write((n_sents + np.cumsum(per_doc)).tobytes())
            n_tokens, n_sents, n_docs = n_tokens + len(ids), n_sents + len(lengths), n_docs + len(per_doc)
        n_bytes = bits.close()
    id_counts.tofile(tmp / "id_counts.bin")
    arrays = {
        "ids": {"dtype": dtype, "shape": [n_tokens]},
        "starts": {"dtype": "uint8", "shape": [n_bytes]},
        "sent_offsets": {"dtype": "int64", "shape": [n_sents + 1]},
        "doc_offsets": {"dtype": "int64", "shape": [n_docs + 1]},
        "id_counts": {"dtype": "int64", "shape": [len(id_counts)]},
    }
    if not (seen_start & seen_inside).any():  # a bit per id instead of one per token
        os.remove(tmp / "starts.bin")
        np.packbits(seen_start, bitorder="little").tofile(tmp / "start_ids.bin")
        del arrays["starts"]
        arrays["start_ids"] = {"dtype": "uint8", "shape": [(len(seen_start) + 7) // 8]}
    for name, top in (("sent_offsets", n_tokens), ("doc_offsets", n_sents)):
        if top < 1 << 32:  # offsets that fit in 4 bytes are kept in 4 (a small rewrite of a small array)
            wide = np.fromfile(tmp / f"{name}.bin", dtype=np.int64)
            wide.astype(np.uint32).tofile(tmp / f"{name}.bin")
            arrays[name]["dtype"] = "uint32"
    return {
        "file": os.path.abspath(path),
        "format": format,
        "errors": errors,
        **({"text_column": text_column} if table_format(path) else {}),
        "word_starts": WORD_STARTS,
        "layout": TOKENS_LAYOUT,
        "arrays": arrays,
    }


_descriptors: "OrderedDict[tuple[Path, int], int]" = OrderedDict()  # the files read lately, open (FileTokens.read)
OPEN_FILES = 64  # at most so many: a corpus of thousands of files stays under the process's limit


def _descriptor(path: Path, inode: int) -> int:
    """A read-only descriptor of file `path` (`inode`: a store built again at the same path is another
    file), kept open for the next read, the least recent closed."""
    fd = _descriptors.pop((path, inode), None)
    if fd is None:
        fd = os.open(path, os.O_RDONLY)
        if os.fstat(fd).st_ino != inode:
            os.close(fd)
            raise FileNotFoundError(f"{path}: replaced since its store was opened; open the store again")
        while len(_descriptors) >= OPEN_FILES:
            os.close(_descriptors.popitem(last=False)[1])
    _descriptors[path, inode] = fd
    return fd


class FileTokens:
    """One file's token store: its offsets in memory, its ids and word-start bits read from their files
    (`read`, `take`, `span`; `ids` and `bits` are memory maps of them, for a look, not for the library's
    reads), or its word starts by id (`start_of_id`)."""

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        meta_path = self.dir / "meta.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"{self.dir}: no token store here (meta.json is missing)")
        self.meta = json.loads(meta_path.read_text())
        if self.meta.get("word_starts") != WORD_STARTS or self.meta.get("layout") != TOKENS_LAYOUT:
            raise ValueError(
                f"{self.dir}: a tokenized corpus of an earlier bertology (one store for a whole corpus, or word "
                "starts guessed from token strings); it is a cache: delete the directory and the next run "
                "builds it again"
            )
        a = open_arrays(self.dir, self.meta["arrays"])
        self.inodes = {name: os.stat(self.dir / f"{name}.bin").st_ino for name in ("ids", "starts") if name in a}
        self.files = {  # what FileTokens.read reads: (path, dtype, elements) of each array
            name: (self.dir / f"{name}.bin", np.dtype(spec["dtype"]), spec["shape"][0])
            for name, spec in self.meta["arrays"].items()
        }
        self.ids, self.bits = a["ids"], a.get("starts")  # (no bits where the ids say where words start)
        self.start_of_id = (
            np.unpackbits(np.asarray(a["start_ids"]), bitorder="little").astype(bool) if "start_ids" in a else None
        )
        # in memory as stored (uint32 where they fit: a 3 GB corpus has 22 million sentences); their
        # readers index them and widen what they read to int64 before any arithmetic
        self.sent_offsets, self.doc_offsets = np.array(a["sent_offsets"]), np.array(a["doc_offsets"])
        self.id_counts = np.asarray(a["id_counts"]) if "id_counts" in a else None  # (older stores: none)

    @property
    def num_tokens(self) -> int:
        return len(self.ids)

    @property
    def num_documents(self) -> int:
        return len(self.doc_offsets) - 1

    # The library reads the store through the methods below, from the files, not through the
    # memory maps: a page of a map once touched stays mapped, and the kernel maps the cached pages
    # around it too, so batches drawn across a store (or the held-out documents counted) would map
    # most of it into the process. A read leaves the pages to the kernel's cache.

    def close(self) -> None:
        """Close the files kept open for reads (a store about to be deleted: its disk is freed)."""
        for name, inode in self.inodes.items():
            fd = _descriptors.pop((self.files[name][0], inode), None)
            if fd is not None:
                os.close(fd)

    def read(self, lo: int, hi: int, name: str = "ids") -> np.ndarray:
        """Elements [lo, hi) of array `name` ("ids" or "starts"), read from its file (a copy)."""
        return self.read_runs([lo], [hi], name)

    def read_runs(self, lo: list[int], hi: list[int], name: str = "ids") -> np.ndarray:
        """Elements [lo[i], hi[i]) of array `name` for each i, end to end: one read a run."""
        path, dtype, size = self.files[name]
        if any(a < 0 or b < a or b > size for a, b in zip(lo, hi)):
            raise IndexError(f"{self.dir}: {name}[{min(lo)}:{max(hi)}] outside its {size} elements")
        k = dtype.itemsize
        fd, out = _descriptor(path, self.inodes[name]), np.empty(sum(hi) - sum(lo), dtype)
        into, at = memoryview(out).cast("B"), 0
        for a, b in zip(lo, hi):
            for c in range(a * k, b * k, READ_BYTES):  # one read returns at most about 2 GB on Linux
                n = min(READ_BYTES, b * k - c)
                if os.preadv(fd, [into[at : at + n]], c) != n:
                    raise ValueError(f"{path}: shorter than its meta.json says; delete the directory")
                at += n
        return out

    def take(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids (int64), word starts (bool)) of the tokens at `positions` (any shape): the positions
        sorted and read as runs (a batch's rows are a few spans of the store), a read a run."""
        positions = np.asarray(positions, dtype=np.int64)
        flat = positions.ravel()
        ids, starts = np.empty(len(flat), np.int64), np.empty(len(flat), bool)
        if len(flat) and (flat.min() < 0 or flat.max() >= self.num_tokens):
            raise IndexError(f"{self.dir}: token positions must be in [0, {self.num_tokens})")
        if len(flat):
            order = np.argsort(flat, kind="stable")
            at = flat[order]  # (P,) sorted
            first = np.flatnonzero(np.diff(at, prepend=-RUN_GAP - 1) > RUN_GAP)  # (R,) each run's first position
            last = np.append(first[1:], len(at)) - 1  # (R,)
            run = np.repeat(np.arange(len(first)), last + 1 - first)  # (P,) each position's run
            lo, hi = at[first], at[last] + 1  # (R,) each
            base = np.cumsum(hi - lo) - (hi - lo)  # (R,) where each run lands in the reads
            ids[order] = self.read_runs(lo.tolist(), hi.tolist(), "ids")[at - lo[run] + base[run]]
            if self.start_of_id is not None:
                return ids.reshape(positions.shape), self.start_of_id[ids].reshape(positions.shape)
            blo, bhi = lo >> 3, ((hi - 1) >> 3) + 1
            bbase = np.cumsum(bhi - blo) - (bhi - blo)
            bits = self.read_runs(blo.tolist(), bhi.tolist(), "starts")[(at >> 3) - blo[run] + bbase[run]]
            starts[order] = (bits >> (at & 7)) & 1
        return ids.reshape(positions.shape), starts.reshape(positions.shape)

    def span(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids (int64), word starts (bool)) of tokens [lo, hi): a read of each array."""
        ids = self.read(lo, hi).astype(np.int64)
        if self.start_of_id is not None:
            return ids, self.start_of_id[ids]
        if lo >= hi:
            return ids, np.zeros(0, bool)
        bits = np.unpackbits(self.read(lo >> 3, ((hi - 1) >> 3) + 1, "starts"), bitorder="little")
        return ids, bits[lo & 7 : (lo & 7) + hi - lo].astype(bool)


def whole_sentences(tokenizer):
    """The tokenizer with its own padding and truncation (a tokenizer.json may carry both: XLNet's pads on
    the left) switched off, on a copy: a store keeps sentences whole, and is keyed by the tokenizer's hash,
    so every reader of a corpus (pretraining, word2vec's pieces) finds the same store."""
    if getattr(tokenizer, "padding", None) is None and getattr(tokenizer, "truncation", None) is None:
        return tokenizer
    tokenizer = type(tokenizer).from_str(tokenizer.to_str())
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def build_token_stores(
    files: list[str],
    tokenizer,
    root: str | os.PathLike,
    format: str = "lines",
    errors: str = "strict",
    show_progress: bool = False,
    workers: int | None = None,
    text_column: str = DEFAULT_TEXT_COLUMN,
) -> list[FileTokens]:
    """The token store of each file, tokenizing only the files whose store is not there yet; a table
    (Parquet, a datasets directory) is read from `text_column`. The tokenizer's padding and truncation
    are not applied (`whole_sentences`)."""
    tokenizer, workers = whole_sentences(tokenizer), default_workers() if workers is None else workers
    dirs = store_dirs(files, tokenizer, Path(root), format, errors, text_column)
    todo = [(f, d) for f, d in zip(files, dirs) if not (d / "meta.json").exists()]
    if todo:
        bar, sizes, known = bytes_bar([f for f, _ in todo], "tokenizing", show_progress)
        with bar:
            for (f, d), size in zip(todo, sizes):
                done = bar.n
                build_cached(
                    d, lambda tmp, f=f: build_file_store(tmp, f, tokenizer, format, errors, workers, bar, text_column)
                )
                if known:  # the file is done
                    bar.update(done + size - bar.n)
    return [FileTokens(d) for d in dirs]


def sentence_ids(path: str, tokenizer) -> Iterator[np.ndarray]:
    """The int32 ids of each non-blank line of the text file `path`, a sentence of the lines format, read
    from its token store (built on every core where missing): under $BERTOLOGY_TOKEN_CACHE, where pretraining
    with the same tokenizer finds it, else in a temporary directory gone after the read. word2vec over a
    tokenizer's pieces reads its corpus so (wordvec sits below data: its callers hand it this function)."""
    with tempfile.TemporaryDirectory(prefix="bertology-pieces-") as private:
        (store,) = build_token_stores([path], tokenizer, os.environ.get(CACHE_ENV) or private, "lines")
        ids, bounds = store.read(0, store.num_tokens).astype(np.int32), store.sent_offsets  # the store may go
        store.close()
    yield from (ids[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()))
