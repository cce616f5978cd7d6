"""Build pretraining instances from text files into an on-disk store, and serve global batches.

    store = build_instances(["data/wiki.txt"], tokenizer, family="bert", max_seq_length=128,
                            seed=0, cache_dir="cache/")
    batch = store.batch(step, batch_size=32)      # dict of tensors named as the models' kwargs

Pipeline (every stage streams; memory is bounded by a document window, not the corpus):

1. Tokenize: documents are read (`corpus.iter_documents`), each sentence encoded, and the ids and
   word-start flags appended to flat arrays on disk (plus sentence and document offsets).
2. Hold out: with heldout=f (fraction) or n (count), that many whole documents, chosen by the
   seed, are set aside BEFORE any instance is made, so no held-out sentence ever appears in a
   training instance (not even as an NSP negative). They get their own store, `store.heldout`.
3. Instances, dupe_factor passes over the documents, each with its own random.Random: segment
   pairs (NSP / SOP, `instances.create_pair_instances`) or packed sequences (RoBERTa,
   `instances.pack_sentences`), padded to max_seq_length and appended to disk.
4. Static masking (BERT, ALBERT): each instance is masked once here, fixed for all epochs. The
   instances are masked in chunks of 4096 (`masking.mask_rows`), chunk c with a generator seeded
   by (seed, 2, c), so the masks are a function of the seed and the instance order, and the
   dupe_factor copies of a text get different masks. Dynamic masking (RoBERTa) stores unmasked
   ids and masks in `batch`.

Files are raw little-endian arrays plus a meta.json, built in a temporary directory and renamed
into place (atomic: a killed build leaves no half-written store); a later call with the same
files (path, size, mtime), tokenizer and parameters reuses them.

Batches are a pure function of (step, batch_size, seed), for exact resume and data parallelism:
global sample i = step * batch_size + j is instance perm_e[i mod N] of epoch e = i // N, where
perm_e is a permutation drawn from a generator seeded by (seed, e); dynamic masks are drawn for
the whole global batch at once, from one generator seeded by (seed, 3, step).
`batch(step, B, rank=r, world_size=w)` returns rows r, r+w, r+2w, ... of that global batch
(every rank masks the global batch and keeps its rows), identical to slicing the
single-process batch.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import warnings
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ..io import atomic_dir
from ..models.family import PRETRAINABLE, get_family
from .corpus import check_files, count_documents, iter_documents
from .instances import (DocumentWindow, Segment, assemble_pair, assemble_single, create_pair_instances,
                        pack_sentences, special_tokens, tokenize_document, word_style)
from .masking import IGNORE_INDEX, mask_rows, seeded_generator

OBJECTIVES = ("mlm+nsp", "mlm+sop", "mlm")
PACKINGS = ("pairs", "full-sentences", "doc-sentences")
MASKINGS = ("static", "dynamic")
_LABEL_KEY = {"mlm+nsp": "next_sentence_label", "mlm+sop": "sentence_order_label"}
_FLUSH = 4096  # rows per write
# instances masked together at build time (static masking); the masks depend on it, so it is
# part of the cache key of a statically masked store
_MASK_CHUNK = 4096


# ----------------------------------------------------------------------------------- disk arrays

class _Writer:
    """Append-only arrays on disk (raw bytes; shape and dtype go to meta.json)."""

    def __init__(self, directory: Path, spec: dict[str, tuple[str, tuple[int, ...]]]):
        self.dir, self.spec = directory, spec
        self.files = {k: open(directory / f"{k}.bin", "wb") for k in spec}
        self.buffers: dict[str, list] = {k: [] for k in spec}
        self.n = {k: 0 for k in spec}

    def add(self, **rows) -> None:
        for k, v in rows.items():
            self.buffers[k].append(v)
            if len(self.buffers[k]) >= _FLUSH:
                self._flush(k)

    def extend(self, key: str, values) -> None:
        self._flush(key)
        arr = np.asarray(values, dtype=self.spec[key][0])
        self.files[key].write(arr.tobytes())
        self.n[key] += len(arr)

    def _flush(self, k: str) -> None:
        if self.buffers[k]:
            arr = np.asarray(self.buffers[k], dtype=self.spec[k][0])
            self.files[k].write(arr.tobytes())
            self.n[k] += len(arr)
            self.buffers[k] = []

    def close(self) -> dict:
        arrays = {}
        for k, f in self.files.items():
            self._flush(k)
            f.close()
            dtype, row_shape = self.spec[k]
            arrays[k] = {"dtype": dtype, "shape": [self.n[k], *row_shape]}
        return arrays


def _open_arrays(directory: Path, arrays: dict) -> dict[str, np.ndarray]:
    out = {}
    for k, a in arrays.items():
        shape = tuple(a["shape"])
        if shape[0] == 0:
            out[k] = np.zeros(shape, dtype=a["dtype"])
        else:
            out[k] = np.memmap(directory / f"{k}.bin", dtype=a["dtype"], mode="r", shape=shape)
    return out


def _build_cached(final: Path, build) -> Path:
    """Run build(tmp_dir) -> meta into a temporary directory that becomes `final` with meta.json in
    one rename; a finished `final` (or one a concurrent builder finished first) is used as it is."""
    if (final / "meta.json").exists():
        return final
    with atomic_dir(final, exists="keep") as tmp:
        meta = build(tmp)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    return final


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------- tokenized corpus

class TokenizedCorpus:
    """Flat token ids + word starts of a whole corpus, with sentence and document offsets."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.meta = json.loads((self.dir / "meta.json").read_text())
        a = _open_arrays(self.dir, self.meta["arrays"])
        self.ids, self.starts, self.sent_offsets, self.doc_offsets = a["ids"], a["starts"], a["sent_offsets"], a["doc_offsets"]

    @property
    def num_documents(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def num_tokens(self) -> int:
        return len(self.ids)

    def token_counts(self, vocab_size: int, documents) -> torch.Tensor:
        """How often each id occurs in `documents` (indices) (V,): one pass over the corpus."""
        chosen = np.zeros(self.num_documents, dtype=bool)
        chosen[np.fromiter(documents, dtype=np.int64)] = True
        doc_tokens = np.diff(np.asarray(self.sent_offsets)[np.asarray(self.doc_offsets)])  # tokens per document
        ids = np.asarray(self.ids, dtype=np.int64)[np.repeat(chosen, doc_tokens)]
        return torch.from_numpy(np.bincount(ids, minlength=vocab_size)[:vocab_size])

    def document(self, d: int) -> list[Segment]:
        s0, s1 = int(self.doc_offsets[d]), int(self.doc_offsets[d + 1])
        bounds = self.sent_offsets[s0:s1 + 1].tolist()
        ids, starts = self.ids[bounds[0]:bounds[-1]].tolist(), self.starts[bounds[0]:bounds[-1]].astype(bool).tolist()
        base = bounds[0]
        return [Segment(ids[a - base:b - base], starts[a - base:b - base]) for a, b in zip(bounds, bounds[1:])]


def tokenize_corpus(files, tokenizer, directory: Path, format: str = "lines", errors: str = "strict",
                    show_progress: bool = False) -> TokenizedCorpus:
    """Stage 1: stream documents through the tokenizer into `directory` (atomically).

    The tokenizer's own padding and truncation (a tokenizer.json may carry both) are switched
    off on a copy: sentences are packed here, and truncating them would lose text silently."""
    style = word_style(tokenizer)
    if getattr(tokenizer, "padding", None) is not None or getattr(tokenizer, "truncation", None) is not None:
        tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        tokenizer.no_padding()
        tokenizer.no_truncation()

    def build(tmp: Path) -> dict:
        w = _Writer(tmp, {"ids": ("int32", ()), "starts": ("uint8", ()), "sent_offsets": ("int64", ()),
                          "doc_offsets": ("int64", ())})
        n_tokens, n_sents = 0, 0
        w.add(sent_offsets=0, doc_offsets=0)
        docs = iter_documents(files, format, errors)
        if show_progress:
            from tqdm import tqdm
            docs = tqdm(docs, desc="tokenizing", unit="doc")
        for doc in docs:
            segments = tokenize_document(doc, tokenizer, style)
            if not segments:
                continue
            for s in segments:
                w.extend("ids", s.ids)
                w.extend("starts", s.starts)
                n_tokens += len(s)
                n_sents += 1
                w.add(sent_offsets=n_tokens)
            w.add(doc_offsets=n_sents)
        return {"files": [os.fspath(f) for f in files], "format": format, "arrays": w.close()}

    return TokenizedCorpus(_build_cached(Path(directory), build))


# ---------------------------------------------------------------------------------- the store

@dataclass(frozen=True)
class BuildConfig:
    family: str
    max_seq_length: int
    objective: str
    packing: str
    masking: str
    dupe_factor: int
    short_seq_prob: float
    whole_word: bool
    ngram: int
    mlm_probability: float
    max_predictions_per_seq: int | None
    seed: int
    negative_window: int


class InstanceStore:
    """Pretraining instances on disk (memory-mapped) and the deterministic global batches."""

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        meta_path = self.dir / "meta.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"{meta_path}: no instance store here (build one with build_instances)")
        self.meta = json.loads(meta_path.read_text())
        self.config = BuildConfig(**self.meta["config"])
        self.arrays = _open_arrays(self.dir, self.meta["arrays"])
        self.mask_id = self.meta["mask_id"]
        self.special_ids = torch.tensor(self.meta["special_ids"], dtype=torch.long)
        self.random_ids = torch.tensor(self.meta["random_ids"], dtype=torch.long)
        self.heldout: InstanceStore | None = None
        self._rebuild = None  # set by build_instances: how to rebuild with a held-out split
        self._permutation = lru_cache(maxsize=4)(self._make_permutation)

    @classmethod
    def open(cls, directory: str | os.PathLike) -> "InstanceStore":
        """A store built earlier (e.g. by rank 0), from its directory."""
        return cls(directory)

    @property
    def num_instances(self) -> int:
        return int(self.meta["arrays"]["input_ids"]["shape"][0])

    def __len__(self) -> int:
        return self.num_instances

    def token_counts(self, vocab_size: int, chunk: int = 8192) -> torch.Tensor:
        """How often each id occurs in the instances' original text (V,): static masks undone,
        special tokens and padding not counted. For the MLM output prior."""
        a = self.arrays
        counts = np.zeros(vocab_size, dtype=np.int64)
        special = self.special_ids.numpy()
        for start in range(0, self.num_instances, chunk):
            ids = np.asarray(a["input_ids"][start:start + chunk], dtype=np.int64)  # (n, T)
            if "labels" in a:
                labels = np.asarray(a["labels"][start:start + chunk], dtype=np.int64)
                ids = np.where(labels != IGNORE_INDEX, labels, ids)
            real = np.arange(ids.shape[1])[None, :] < np.asarray(a["lengths"][start:start + chunk])[:, None]
            ids = ids[real & ~np.isin(ids, special)]
            if len(ids) and ids.max() >= vocab_size:
                raise ValueError(f"{self.dir}: token id {int(ids.max())} outside a vocabulary of {vocab_size}")
            counts += np.bincount(ids, minlength=vocab_size)
        return torch.from_numpy(counts)

    @property
    def max_seq_length(self) -> int:
        return self.config.max_seq_length

    def __repr__(self):
        c = self.config
        return (f"InstanceStore({self.num_instances} instances, family={c.family!r}, objective={c.objective!r}, "
                f"packing={c.packing!r}, masking={c.masking!r}, T={c.max_seq_length}, dir={str(self.dir)!r})")

    def steps_per_epoch(self, batch_size: int) -> int:
        return max(1, self.num_instances // batch_size)

    def _make_permutation(self, seed: int, epoch: int) -> np.ndarray:
        return np.random.default_rng([seed, epoch]).permutation(self.num_instances)

    def indices(self, step: int, batch_size: int, seed: int | None = None) -> np.ndarray:
        """Instance indices of the global batch at `step` (epochs follow one another seamlessly)."""
        if step < 0 or batch_size < 1:
            raise ValueError(f"need step >= 0 and batch_size >= 1, got step={step}, batch_size={batch_size}")
        seed = self.config.seed if seed is None else seed
        g = step * batch_size + np.arange(batch_size, dtype=np.int64)
        epoch, pos = np.divmod(g, self.num_instances)
        out = np.empty(batch_size, dtype=np.int64)
        for e in np.unique(epoch):
            sel = epoch == e
            out[sel] = self._permutation(seed, int(e))[pos[sel]]
        return out

    def batch(self, step: int, batch_size: int, seed: int | None = None, rank: int = 0,
              world_size: int = 1) -> dict[str, torch.Tensor]:
        """Rows rank::world_size of the global batch at `step`, as the model's keyword arguments."""
        if not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
        seed = self.config.seed if seed is None else seed
        rows = np.arange(rank, batch_size, world_size)
        global_idx = self.indices(step, batch_size, seed)
        idx = global_idx[rows]
        a = self.arrays
        input_ids = torch.from_numpy(np.asarray(a["input_ids"][idx], dtype=np.int64))
        lengths = torch.from_numpy(np.asarray(a["lengths"][idx], dtype=np.int64))
        T = input_ids.shape[1]
        out = {"input_ids": input_ids, "attention_mask": (torch.arange(T)[None, :] < lengths[:, None]).long()}
        if "token_type_ids" in a:
            out["token_type_ids"] = torch.from_numpy(np.asarray(a["token_type_ids"][idx], dtype=np.int64))
        if self.config.masking == "static":
            out["labels"] = torch.from_numpy(np.asarray(a["labels"][idx], dtype=np.int64))
        else:
            # dynamic masking: a fresh mask each time a sequence is fed. The whole global batch is
            # masked with one generator from (seed, 3, step), and each rank keeps its rows, so
            # ranks agree with the single-process batch.
            ids = torch.from_numpy(np.asarray(a["input_ids"][global_idx], dtype=np.int64))
            starts = (torch.from_numpy(np.asarray(a["word_start"][global_idx], dtype=bool)) if "word_start" in a
                      else None)
            masked, labels = mask_rows(ids, torch.isin(ids, self.special_ids), starts,
                                       seeded_generator(seed, 3, step), **self._mask_kw())
            keep = torch.from_numpy(rows)
            out["input_ids"], out["labels"] = masked[keep], labels[keep]
        key = _LABEL_KEY.get(self.config.objective)
        if key:
            out[key] = torch.from_numpy(np.asarray(a["sentence_label"][idx], dtype=np.int64))
        return out

    def _mask_kw(self) -> dict:
        c = self.config
        return dict(mask_id=self.mask_id, random_ids=self.random_ids, mlm_probability=c.mlm_probability,
                    max_predictions=c.max_predictions_per_seq, ngram=c.ngram)

    def split_heldout(self, heldout: float | int) -> tuple["InstanceStore", "InstanceStore"]:
        """(train, heldout) stores rebuilt from the same files with `heldout` documents (a
        fraction < 1 or a count) set aside before instance building (cached like any build)."""
        if self._rebuild is None:
            raise ValueError(f"{self.dir}: opened from disk; call build_instances(..., heldout=...) instead")
        train = self._rebuild(heldout)
        return train, train.heldout


def _resolve(family, objective, packing, masking, ngram):
    paper = get_family(family).pretraining
    if paper is None and None in (objective, packing, masking):
        raise ValueError(f"{family} has no pretraining recipe of its own: give objective, packing and masking, or "
                         f"choose one of {', '.join(PRETRAINABLE)}")
    d_obj, d_pack, d_mask, d_ngram = ((paper.objective, paper.packing, paper.masking, paper.ngram) if paper
                                      else (objective, packing, masking, 1))
    objective = objective or d_obj
    packing = packing or (d_pack if objective != "mlm" else ("full-sentences" if d_pack == "pairs" else d_pack))
    masking, ngram = masking or d_mask, d_ngram if ngram is None else ngram
    for name, value, allowed in (("objective", objective, OBJECTIVES), ("packing", packing, PACKINGS),
                                 ("masking", masking, MASKINGS)):
        if value not in allowed:
            raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")
    if (objective == "mlm") != (packing != "pairs"):
        raise ValueError(f"objective {objective!r} does not go with packing {packing!r}: segment pairs are for "
                         f"mlm+nsp / mlm+sop, full-sentences / doc-sentences for mlm")
    return objective, packing, masking, ngram


def build_instances(files, tokenizer, family: str = "bert", *, max_seq_length: int = 128,
                    objective: str | None = None, packing: str | None = None, masking: str | None = None,
                    dupe_factor: int = 1, short_seq_prob: float = 0.1, whole_word: bool = False,
                    ngram: int | None = None, mlm_probability: float = 0.15,
                    max_predictions_per_seq: int | None = 20, seed: int = 12345,
                    cache_dir: str | os.PathLike | None = None, format: str = "lines", heldout: float | int = 0,
                    negative_window: int = 1000, errors: str = "strict",
                    show_progress: bool | None = None) -> InstanceStore:
    """Tokenize `files` and build the pretraining instances of `family` (see the module docstring).

    Defaults follow each paper: bert = mlm+nsp, pairs, static masking; roberta = mlm,
    full-sentences, dynamic masking; albert = mlm+sop, pairs, static, n-gram (n <= 3) masking of
    whole words. ngram > 1 masks n-grams of words when whole_word=True (ALBERT), of tokens otherwise.
    """
    files = check_files(files)
    objective, packing, masking, ngram = _resolve(family, objective, packing, masking, ngram)
    specials = special_tokens(tokenizer, family)
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length must be >= 5, got {max_seq_length}")
    if dupe_factor < 1:
        raise ValueError(f"dupe_factor must be >= 1, got {dupe_factor}")
    if not 0 <= short_seq_prob <= 1:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    n_specials = 3 if packing == "pairs" else 2
    if max_predictions_per_seq is not None and max_predictions_per_seq < round(mlm_probability * (max_seq_length - n_specials)):
        warnings.warn(f"max_predictions_per_seq={max_predictions_per_seq} caps masking below mlm_probability="
                      f"{mlm_probability} of max_seq_length={max_seq_length} (Google used 20 for 128, 80 for 512)")
    if show_progress is None:
        show_progress = sys.stderr.isatty()
    cache = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="bertology-data-"))
    stamp = [(os.path.abspath(f), os.path.getsize(f), os.stat(f).st_mtime_ns) for f in files]
    tok_key = _digest({"files": stamp, "tokenizer": tokenizer.to_str(), "format": format, "errors": errors})
    corpus = tokenize_corpus(files, tokenizer, cache / f"tokens-{tok_key}", format, errors, show_progress)
    where = ", ".join(files)
    if corpus.num_documents == 0:
        raise ValueError(f"corpus file(s) {where} hold no text (no document with a token)")

    config = BuildConfig(family, max_seq_length, objective, packing, masking, dupe_factor, short_seq_prob,
                         bool(whole_word), int(ngram), mlm_probability, max_predictions_per_seq, seed, negative_window)
    docs_train, docs_held = _split_documents(corpus.num_documents, heldout, seed, where)
    if config.objective == "mlm+nsp" and (len(docs_train) < 2 or 0 < len(docs_held) < 2):
        raise ValueError(f"NSP draws its random next sentences from other documents, so it needs at least two in each "
                         f"split; {where} hold {corpus.num_documents} document(s): {len(docs_train)} for training and "
                         f"{len(docs_held)} held out; give more documents (a blank line separates them) or change "
                         "the held-out share (--heldout)")
    vocab_ids = sorted(set(tokenizer.get_vocab().values()) - set(specials.all_ids))
    common = {"mask_id": specials.mask, "special_ids": list(specials.all_ids), "random_ids": vocab_ids}

    def make(doc_ids, cfg, part):
        static_masks = {"mask_chunk": _MASK_CHUNK} if cfg.masking == "static" else {}
        key = _digest({"tokens": tok_key, "config": cfg.__dict__, "heldout": heldout, "part": part, **static_masks})
        d = _build_cached(cache / f"instances-{key}",
                        lambda tmp: {**_build_store(tmp, corpus, doc_ids, cfg, specials, where, vocab_ids), **common,
                                     "config": cfg.__dict__, "part": part})
        store = InstanceStore(d)
        if cache_dir is None:  # a private temporary cache goes away with the store
            weakref.finalize(store, shutil.rmtree, cache, True)
        return store

    store = make(docs_train, config, "train")
    if docs_held:
        # evaluation data: the same construction, one copy (dupe_factor 1)
        held_cfg = BuildConfig(**{**config.__dict__, "dupe_factor": 1})
        store.heldout = make(docs_held, held_cfg, "heldout")

    def rebuild(h):
        return build_instances(files, tokenizer, family, max_seq_length=max_seq_length, objective=objective,
                               packing=packing, masking=masking, dupe_factor=dupe_factor,
                               short_seq_prob=short_seq_prob, whole_word=whole_word, ngram=ngram,
                               mlm_probability=mlm_probability, max_predictions_per_seq=max_predictions_per_seq,
                               seed=seed, cache_dir=cache_dir, format=format, heldout=h,
                               negative_window=negative_window, errors=errors, show_progress=show_progress)
    store._rebuild = rebuild
    return store


def check_corpus_documents(files, format: str, heldout: float | int, nsp: bool) -> int:
    """Every file exists and decodes, and there are documents enough for `heldout` (and for NSP,
    two in each split): one streaming pass before anything is written. Returns the count."""
    documents = count_documents(check_files(files), format)
    where = ", ".join(map(str, files))
    if documents == 0:
        raise ValueError(f"corpus file(s) {where} hold no text")
    held = heldout_count(documents, heldout)
    if held >= documents:
        raise ValueError(f"--heldout {heldout:g} sets aside {held} of the {documents} documents of {where}, "
                         "leaving none to train on")
    if nsp and (documents - held < 2 or held == 1):
        raise ValueError(f"NSP draws its random next sentences from other documents, so it needs at least two in each "
                         f"split; {where} hold {documents} document(s): {documents - held} for training and {held} "
                         "held out; give more documents (a blank line separates them) or change --heldout")
    return documents


def heldout_count(n_docs: int, heldout: float | int) -> int:
    """How many of `n_docs` documents `heldout` (a fraction in (0, 1), or a count) sets aside.

    >>> heldout_count(100, 0.05), heldout_count(10, 0.01), heldout_count(10, 3)
    (5, 1, 3)
    """
    if isinstance(heldout, float) and not 0 <= heldout < 1:
        raise ValueError(f"heldout fraction must be in [0, 1), got {heldout}")
    if heldout == 0:
        return 0
    return max(1, round(heldout * n_docs)) if isinstance(heldout, float) else int(heldout)


def _split_documents(n_docs: int, heldout: float | int, seed: int, where: str) -> tuple[list[int], list[int]]:
    """Document indices (train, held out); the held-out ones drawn by the seed."""
    if heldout == 0:
        return list(range(n_docs)), []
    n = heldout_count(n_docs, heldout)
    if not 0 < n < n_docs:
        raise ValueError(f"cannot hold out {n} of the {n_docs} documents of {where}")
    held = set(random.Random(seed).sample(range(n_docs), n))
    return [d for d in range(n_docs) if d not in held], sorted(held)


def _build_store(tmp: Path, corpus: TokenizedCorpus, doc_ids: list[int], cfg: BuildConfig, specials, where: str,
                 random_ids: list[int]) -> dict:
    """Stage 3 (+ 4 for static masking): write the instances of documents `doc_ids`."""
    T = cfg.max_seq_length
    pairs = cfg.packing == "pairs"
    static = cfg.masking == "static"
    spec = {"input_ids": ("int32", (T,)), "lengths": ("int32", ())}
    if get_family(cfg.family).segments:
        spec["token_type_ids"] = ("int8", (T,))
    if static:
        spec["labels"] = ("int32", (T,))
    elif cfg.whole_word:
        spec["word_start"] = ("uint8", (T,))
    if pairs:
        spec["sentence_label"] = ("int8", ())
    w = _Writer(tmp, spec)
    special_ids = torch.tensor(specials.all_ids, dtype=torch.long)
    mask_kw = dict(mask_id=specials.mask, random_ids=torch.tensor(random_ids, dtype=torch.long), mlm_probability=cfg.mlm_probability,
                   max_predictions=cfg.max_predictions_per_seq, ngram=cfg.ngram)
    count, n_chunks = 0, 0
    # the rows of the current chunk, padded to T, as lists (one per array; word starts when needed)
    chunk: dict[str, list] = {k: [] for k in ("input_ids", "lengths", "token_type_ids", "word_start",
                                              "sentence_label")}

    def emit(ids, types, starts, label=None):
        nonlocal count
        pad = T - len(ids)
        chunk["input_ids"].append(ids + [specials.pad] * pad)
        chunk["lengths"].append(len(ids))
        if cfg.whole_word:
            chunk["word_start"].append(starts + [False] * pad)
        if "token_type_ids" in spec:
            chunk["token_type_ids"].append(types + [0] * pad)
        if label is not None:
            chunk["sentence_label"].append(label)
        count += 1
        if len(chunk["lengths"]) == _MASK_CHUNK:
            write_chunk()

    def write_chunk():
        nonlocal n_chunks
        if not chunk["lengths"]:
            return
        rows = torch.tensor(chunk["input_ids"], dtype=torch.long)  # (n, T)
        starts = torch.tensor(chunk["word_start"], dtype=torch.bool) if cfg.whole_word else None
        if static:  # this chunk's masks, fixed at build time
            rows, labels = mask_rows(rows, torch.isin(rows, special_ids), starts,
                                     seeded_generator(cfg.seed, 2, n_chunks), **mask_kw)
            w.extend("labels", labels.numpy())
        elif cfg.whole_word:
            w.extend("word_start", starts.numpy())
        w.extend("input_ids", rows.numpy())
        for k in ("lengths", "token_type_ids", "sentence_label"):
            if k in spec:
                w.extend(k, chunk[k])
        for v in chunk.values():
            v.clear()
        n_chunks += 1

    for dupe in range(cfg.dupe_factor):
        rng = random.Random(int(seeded_generator(cfg.seed, 1, dupe).initial_seed()))
        docs = (corpus.document(d) for d in doc_ids)
        if pairs:
            objective = "nsp" if cfg.objective == "mlm+nsp" else "sop"
            window = DocumentWindow(cfg.negative_window)
            pending = (cur for doc in docs for cur in window.push(doc))
            for cur in _chain(pending, window):
                for p in create_pair_instances(cur, T - 3, cfg.short_seq_prob, objective, rng,
                                               window if objective == "nsp" else None):
                    emit(*assemble_pair(p, specials), label=p.label)
        else:
            for seq in pack_sentences(docs, T - 2, cfg.packing == "full-sentences", specials.sep):
                emit(*assemble_single(seq, specials))
    write_chunk()
    arrays = w.close()
    if count == 0:
        raise ValueError(f"corpus file(s) {where} are too small: {len(doc_ids)} document(s), "
                         f"{corpus.num_tokens} tokens make no {cfg.packing} instance of max_seq_length={T}")
    return {"arrays": arrays}


def _chain(pending, window: DocumentWindow):
    yield from pending
    yield from window.drain()
