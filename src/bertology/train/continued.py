"""Continued pretraining (domain- or task-adaptive, DAPT / TAPT): a run that starts from a checkpoint
directory, a Hugging Face one or one bertology wrote, instead of a preset.

    bertology pretrain --family bert --init minilm/ --corpus domain.txt --out dapt/ --objective mlm
    bertology pretrain --family bert --init minilm/ --corpus train.tsv --text-column text --out tapt/

What the directory gives: the config (the architecture, so --preset and --vocab-size contradict it),
the weights, and the tokenizer (or --tokenizer, whose vocabulary must fit the embedding table). The
objective is the family's (BERT MLM + NSP, ALBERT MLM + SOP, RoBERTa MLM, XLNet the permutation LM,
ELECTRA replaced-token detection; --objective mlm drops the pair task). A head the directory has is
loaded; one it lacks (an encoder-only checkpoint such as all-MiniLM-L6-v2 has no MLM head) is built new:
the family's own initialisation, its decoder tied to the word embeddings, its bias from the corpus's
unigram prior, and the log says so.

ELECTRA trains a pair (models/electra.py ElectraPair): DIR is the discriminator (a bertology run or
checkpoint, or Hugging Face's ElectraForPreTraining as google/electra-*-discriminator ships), and the
generator is DIR/generator/ where bertology saved one, or `--init-generator DIR2` (ElectraForMaskedLM,
as google/electra-*-generator ships), or else new at `--generator-size`. Either way the pair shares the
discriminator's embeddings, so a loaded generator must have their shape (vocabulary, embedding size,
positions, token types); its own copy of them is replaced (a warning where it differs).

Vocabulary extension (`--extend-vocab N`): the family's tokenizer kind is trained on the corpus (its
text normalized as the checkpoint's tokenizer normalizes it), and the N most frequent of its
word-initial pieces that the checkpoint's tokenizer splits into two pieces or more are added to the
checkpoint's vocabulary (WordPiece and Unigram: one entry each; byte-level BPE: the merges that build
the piece from the checkpoint's pieces, an intermediate piece counting as one of the N). Each new row
of the token embedding, and of every other vocabulary-sized tensor (the MLM bias; an untied decoder),
is the mean of the rows of the piece's old pieces: the rule most practitioners use (the new piece
starts where the model already "reads" the word, so nothing it knew is disturbed), and a new id
has ids ≥ the old vocabulary size, so every old row keeps its place (transformers'
`resize_token_embeddings` layout).

Nothing here is a second training loop or a second model class: the model is the family's own,
and the job (pretrain.py, plm.py) runs it as it runs a preset's, at the same speed.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator

import torch

from ..data import Recipe, check_corpus_documents, heldout_value
from ..data.corpus import split_sentences
from ..io import atomic_path, atomic_write_json, iter_files
from ..models import PRETRAINABLE, get_family, task_class
from ..models.checkpoint import (
    CheckpointError,
    absent_parameters,
    check_tokenizer as check_model_tokenizer,
    load_state,
    read_config,
    read_weights,
)
from ..models.config import ElectraConfig, EncoderConfig
from ..models.electra import (
    GENERATOR_DIR,
    ElectraForMaskedLM,
    ElectraPair,
    check_generator_checkpoint,
    check_shared_embeddings,
    generator_config,
)
from ..tables import DEFAULT_TEXT_COLUMN, table_format
from ..tasks.readers import read_table
from ..tokenizers import Tokenizer, train
from ..tokenizers.corpus import count_words_in_files

CONTINUABLE = PRETRAINABLE  # the families --init continues: every one that pretrains here
INIT_RECORD = "init.json"  # in the output directory: which checkpoint (and extension) the run continues


@dataclass
class Generator:
    """ELECTRA: the generator an --init run continues (DIR/generator/ or --init-generator)."""

    path: Path
    config: ElectraConfig
    tensors: dict[str, torch.Tensor] = field(repr=False)
    source: str  # the weights file, for messages


@dataclass
class Start:
    """What `--init DIR` gives a run, checked before anything is written."""

    path: Path
    config: EncoderConfig
    tokenizer: Tokenizer
    tokenizer_source: str
    tensors: dict[str, torch.Tensor] = field(repr=False, default_factory=dict)
    source: str = ""  # the weights file, for messages
    generator: Generator | None = None  # ELECTRA's rtd: the generator loaded beside the discriminator (None: new)


def check_init(o, head: str) -> Start:
    """Read and check `--init DIR` against the run's options (train.pretrain.PretrainOptions): the
    directory is a model of a family pretrained here, no option contradicts it, the tokenizer fits
    its embedding table, its weights hold a whole backbone for the job's `head` model. Each error names
    the option and the directory."""
    path = Path(o.init)
    where = f"--init {path}"
    if not path.is_dir():
        raise FileNotFoundError(f"{where}: not a model directory" + ("" if path.exists() else " (it does not exist)"))
    try:
        config = read_config(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{where}: no config.json, so not a model directory (a Hugging Face or bertology "
            "model directory holds config.json and its weights)"
        ) from None
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    family = config.model_type
    if family not in CONTINUABLE:
        raise ValueError(
            f"{where}: a {family} checkpoint; bertology continues pretraining {', '.join(CONTINUABLE)}"
            + (" (DistilBERT comes from `bertology distill`)" if family == "distilbert" else "")
        )
    if o.family != family:
        raise ValueError(f"--family {o.family} contradicts {where}, a {family} checkpoint")
    shape = f"a {family} checkpoint of {config.num_hidden_layers} layers, hidden size {config.hidden_size}"
    if o.preset is not None:
        raise ValueError(
            f"--preset {o.preset} contradicts {where} ({shape}): the architecture comes from the "
            "checkpoint; drop --preset"
        )
    if o.vocab_size is not None and not o.extend_vocab:
        raise ValueError(
            f"--vocab-size {o.vocab_size} contradicts {where}, whose vocabulary has {config.vocab_size} "
            "entries; drop --vocab-size (with --extend-vocab it sizes the domain tokenizer)"
        )
    if o.config_overrides:
        raise ValueError(
            f"config overrides {sorted(o.config_overrides)} contradict {where}: the config comes from the checkpoint"
        )
    if o.init_embeddings is not None:
        raise ValueError(
            f"--init-embeddings {o.init_embeddings} contradicts {where}: the token embedding comes from the checkpoint"
        )
    if family != "xlnet" and o.seq_len > config.max_length:  # XLNet's positions are relative: any length
        raise ValueError(f"--seq-len {o.seq_len} is longer than the {config.max_length} positions of {where}")
    try:
        tensors, weights = read_weights(path)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{where}: {e}") from None
    missing = [
        n
        for n in absent_parameters(task_class(family, head)(config), tensors)
        if n.startswith("backbone.") and ".pooler." not in n
    ]
    if missing:
        raise CheckpointError(
            f"{where}: {weights} lacks {missing[:4]}{' …' if len(missing) > 4 else ''}: not a complete {family} model"
        )
    pair = family == "electra" and head == "ForPreTraining"  # replaced-token detection: a generator beside it
    if o.init_generator is not None and not pair:
        raise ValueError(
            f"--init-generator {o.init_generator}: only ELECTRA's rtd objective trains a generator "
            f"(this run trains {family}'s {head} head)"
        )
    generator = check_generator(o, path, config, tensors) if pair else None
    source = o.tokenizer if o.tokenizer is not None else str(path)
    try:
        tok = Tokenizer.load(source)
    except (FileNotFoundError, ValueError) as e:
        flag = "--tokenizer" if o.tokenizer is not None else where
        raise type(e)(f"{flag}: no tokenizer could be read ({e})") from None
    check_tokenizer(tok, config, source, where, exact=o.tokenizer is not None)
    tok.no_truncation()  # the run's sequences decide lengths, not the settings a checkpoint ships with
    tok.no_padding()
    return Start(path, config, tok, source, tensors, weights, generator)


def check_generator(o, path: Path, config: ElectraConfig, tensors: dict[str, torch.Tensor]) -> Generator | None:
    """ELECTRA's generator for an --init run: --init-generator, else DIR/generator/ when the directory
    has one, else None (a new one). It must share the discriminator's embedding shape, agree with a
    --generator-size given, and hold a whole ElectraForMaskedLM; each error names both sides."""
    if any(k.startswith("generator_predictions.") for k in tensors) and not any(
        k.startswith("discriminator_predictions.") for k in tensors
    ):
        raise ValueError(
            f"--init {path}: an ELECTRA generator (ElectraForMaskedLM); --init takes the discriminator "
            "(ElectraForPreTraining) and --init-generator this directory"
        )
    gen_dir = Path(o.init_generator) if o.init_generator is not None else path / GENERATOR_DIR
    if o.init_generator is None and not gen_dir.exists():
        return None
    where = f"--init-generator {gen_dir}" if o.init_generator is not None else f"--init {path}: its generator {gen_dir}"
    try:
        gen = read_config(gen_dir)
    except FileNotFoundError:
        raise FileNotFoundError(f"{where}: no config.json, so not a model directory") from None
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if not isinstance(gen, ElectraConfig):
        raise ValueError(f"{where}: a {gen.model_type} checkpoint, not an ELECTRA generator")
    check_shared_embeddings(gen, config, f"{where} (the generator)", f"the discriminator's (--init {path})")
    made = generator_config(config, o.generator_size).hidden_size if o.generator_size is not None else gen.hidden_size
    if made != gen.hidden_size:
        raise ValueError(
            f"--generator-size {o.generator_size} (hidden size {made}) contradicts {where}, a generator "
            f"of hidden size {gen.hidden_size}; drop --generator-size"
        )
    try:
        gen_tensors, source = read_weights(gen_dir)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{where}: {e}") from None
    check_generator_checkpoint(gen_tensors, source)  # a discriminator given as the generator: say so
    missing = absent_parameters(ElectraForMaskedLM(gen), gen_tensors)
    if missing:
        raise CheckpointError(
            f"{where}: {source} lacks {missing[:4]}{' …' if len(missing) > 4 else ''}: not a "
            "complete ELECTRA generator (ElectraForMaskedLM)"
        )
    return Generator(gen_dir, gen, gen_tensors, source)


def check_tokenizer(tok: Tokenizer, config: EncoderConfig, source: str, where: str, exact: bool = True) -> None:
    """The tokenizer belongs to the checkpoint: models.check_tokenizer (ids within the embedding table,
    the checkpoint's pad id, truncation within its positions), and here what continuing needs beyond
    it: the family's pad token present, and with `exact` as many entries as the table has rows (a
    tokenizer the user gives: another vocabulary of a smaller size would fit and still mean other
    words); the directory's own may be smaller (some checkpoints pad their table to a round size)."""
    if tok.vocab_size > config.vocab_size or (exact and tok.vocab_size != config.vocab_size):
        raise ValueError(
            f"tokenizer {source} has {tok.vocab_size} entries, but the embedding table of {where} has "
            f"{config.vocab_size} rows: they do not belong together"
        )
    record = get_family(config.model_type)
    if tok.token_to_id(record.specials.pad) is None:
        raise ValueError(f"tokenizer {source} has no {record.specials.pad} token, which {config.model_type} pads with")
    check_model_tokenizer(config, tok, source)


# ---- the model -------------------------------------------------------------------------------------


def head_modules(model) -> set[str]:
    """The top-level modules of a task model outside its backbone (mlm, pair, lm_loss)."""
    return {name for name, _ in model.named_children() if name != "backbone"}


def start_model(start: Start, head: str, **overrides) -> tuple[torch.nn.Module, list[str]]:
    """The family's `head` model with the checkpoint's weights; returns it and the head modules the
    checkpoint did not hold (built new, as the family initialises them). `overrides` set run-time
    config fields that shape no weight (XLNet's mem_len, reuse_len, bi_data)."""
    config = copy.deepcopy(start.config)
    for k, v in overrides.items():
        setattr(config, k, v)
    model = task_class(config.model_type, head)(config)
    config.architectures = [model.architecture]
    return model, load_start(model, start)


def load_start(model, start: Start) -> list[str]:
    """Copy the checkpoint's weights into `model` (a task model of its family); returns the head
    modules it did not hold, which keep their new initialisation."""
    tensors, source = start.tensors, start.source
    absent = absent_parameters(model, tensors)  # check_init made sure the backbone is whole
    heads = {n.split(".")[0] for n, _ in model.state_dict().items() if not n.startswith("backbone.")}
    new = sorted({n.split(".")[0] for n in absent if not n.startswith("backbone.")})
    with warnings.catch_warnings():  # what is absent was listed above; extra heads (NSP when training MLM) are dropped
        warnings.simplefilter("ignore")
        load_state(model, tensors, source, strict=False, backbone_only=True)  # a bare backbone's names too
        if set(new) != heads:  # some head is in the checkpoint (a task checkpoint, names prefixed)
            load_state(model, tensors, source, strict=False)
    if any(".pooler." in n for n in absent):
        new.append("backbone.pooler")
    return new


def start_pair(start: Start, generator_size: float) -> tuple[ElectraPair, list[str]]:
    """ELECTRA's pretraining pair from --init: the discriminator loaded as start_model loads a model,
    the generator from `start.generator` or new at `generator_size` (then "generator" is among the
    parts returned as new). The shared embeddings are the discriminator's."""
    gen = start.generator
    pair = ElectraPair(copy.deepcopy(start.config), generator_size, gen.config if gen is not None else None)
    if gen is not None:  # first: the discriminator's embeddings, loaded next, replace the generator's copy
        load_state(pair.generator, gen.tensors, gen.source, strict=True)
        theirs = {k: v.clone() for k, v in pair.generator.backbone.embeddings.state_dict().items()}
    new = load_start(pair.discriminator, start)
    if gen is None:
        return pair, new + ["generator"]
    ours = pair.discriminator.backbone.embeddings.state_dict()
    differ = sorted(k for k, v in theirs.items() if not torch.equal(v, ours[k]))
    if differ:
        warnings.warn(
            f"{gen.source}: the generator's embeddings ({', '.join(differ)}) differ from the "
            f"discriminator's in {start.source}; the pair shares one embeddings module, the discriminator's",
            stacklevel=2,
        )
    return pair, new


def generator_note(start: Start, pair: ElectraPair, unigram_prior: bool) -> str:
    """The log's line on where an --init run's generator came from."""
    g, H = pair.generator.config, pair.config.hidden_size
    if start.generator is not None:
        return (
            f"--init {start.path}: the generator from {start.generator.path} (hidden size {g.hidden_size} of "
            f"the discriminator's {H}), sharing the discriminator's embeddings"
        )
    return (
        f"--init {start.path}: no generator ({start.path / GENERATOR_DIR} or --init-generator): a new one of "
        f"hidden size {g.hidden_size} (--generator-size {pair.generator_size} of {H}), sharing the "
        "discriminator's embeddings, its MLM decoder tied to them"
        + (", its output bias from the corpus's unigram prior" if unigram_prior else "")
    )


def resumed_model(start: Start, head: str, vocab_size: int, **overrides) -> torch.nn.Module:
    """The model of a resumed --init run: the checkpoint's architecture with the run's vocabulary
    (grown by an extension); its weights come from the run's own checkpoint."""
    config = copy.deepcopy(start.config)
    for k, v in {"vocab_size": vocab_size, **overrides}.items():
        setattr(config, k, v)
    return task_class(config.model_type, head)(config)


def resumed_pair(start: Start, generator_size: float, vocab_size: int) -> ElectraPair:
    """resumed_model for ELECTRA's pair: the generator shaped as the run's (its checkpoint's, or
    `generator_size`'s)."""
    config = copy.deepcopy(start.config)
    config.vocab_size = vocab_size
    gen = start.generator
    return ElectraPair(config, generator_size, replace(gen.config, vocab_size=vocab_size) if gen is not None else None)


# ---- vocabulary extension --------------------------------------------------------------------------


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
    family: str,
    base: int,
    vocab_size: int | None = None,
    show_progress: bool = False,
) -> Extension:
    """Train the family's tokenizer kind on `corpus` (normalized as `old` normalizes) with `vocab_size`
    pieces (default: as many as `old`), choose up to n new pieces and build the extended tokenizer."""
    record = get_family(family)
    normalize = old.normalizer.normalize_str if old.normalizer is not None else None
    lines = (normalize(line) if normalize else line for line in iter_files(corpus))
    domain = train(
        lines=lines,
        family=record.tokenizer,
        vocab_size=vocab_size or old.vocab_size,
        show_progress=show_progress,
        **dict(record.tokenizer_options),
    )
    words = count_words_in_files(corpus, old.normalizer, old.pre_tokenizer, show_progress=show_progress)
    chosen = choose_pieces(old, domain, words, n)
    if not chosen:
        raise ValueError(
            f"--extend-vocab {n}: no piece of the tokenizer trained on {corpus_name(corpus)} is new to "
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


@torch.no_grad()
def grow_vocabulary(model, old_ids: list[list[int]]) -> torch.nn.Module:
    """The same model with len(old_ids) more vocabulary entries: every tensor with a vocabulary-sized
    first dimension (the token embedding; the MLM / LM bias; an untied decoder) keeps its rows and gains
    one per new id, the mean of the rows at that id's old pieces. A new model object (its tied decoder
    tied again); the old one is left as it was."""
    V = model.config.vocab_size
    config = copy.deepcopy(model.config)
    config.vocab_size = V + len(old_ids)
    grown = (
        ElectraPair(config, gen_config=replace(model.generator.config, vocab_size=config.vocab_size))
        if isinstance(model, ElectraPair)
        else type(model)(config)
    )  # the pair: both grow, still sharing
    state = grown.state_dict()
    for name, value in model.state_dict().items():
        target = state[name]
        if value.shape == target.shape:
            target.copy_(value)
        elif value.shape[0] == V and target.shape[0] == config.vocab_size and value.shape[1:] == target.shape[1:]:
            # a piece that occurs twice in a split counts twice in its mean
            new_rows = torch.stack([value[torch.tensor(ids)].double().mean(0) for ids in old_ids])  # (N, …)
            target.copy_(torch.cat([value, new_rows.to(value.dtype)]))
        else:
            raise ValueError(
                f"{name}: shape {tuple(value.shape)} does not grow with the vocabulary to {tuple(target.shape)}"
            )
    return grown


# ---- the run's record, for --resume ----------------------------------------------------------------


def init_record(o) -> dict:
    return {"init": os.path.abspath(o.init) if o.init else None, "extend_vocab": o.extend_vocab}


def check_resume(o, out: Path) -> None:
    """`--resume` continues the same run: the --init it started from (and its --extend-vocab), or none."""
    file = out / INIT_RECORD
    saved = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {"init": None, "extend_vocab": None}
    mine = init_record(o)
    if saved["init"] != mine["init"]:
        if mine["init"] is None:
            raise ValueError(f"--resume {out}: the run there continued --init {saved['init']}; pass the same --init")
        if saved["init"] is None:
            raise ValueError(
                f"--init {o.init} with --resume: the run in {out} started from a preset, not from "
                f"{o.init}; continue it without --init, or choose another --out"
            )
        raise ValueError(f"--init {o.init} with --resume: the run in {out} continued --init {saved['init']}")
    if saved["extend_vocab"] != mine["extend_vocab"]:
        raise ValueError(
            f"--extend-vocab {o.extend_vocab} with --resume: the run in {out} used --extend-vocab "
            f"{saved['extend_vocab']}"
        )


def write_init_record(o, out: Path, extension: Extension | None) -> None:
    atomic_write_json(
        out / INIT_RECORD, {**init_record(o), **({"extension": extension.summary()} if extension else {})}
    )


# ---- a table's text column as the corpus (TAPT, Parquet, datasets) -----------------------------------

TASK_CORPUS = "task-corpus.txt"  # a table corpus's texts, a record a document, as the text corpus the jobs read
TASK_CORPUS_SOURCE = "task-corpus.source"  # beside it: the user's files and column, which messages name


def is_table_corpus(files: list[str], text_column: str | None) -> bool:
    """Whether --corpus is read as tables: --text-column given, or a Parquet file / datasets directory in it."""
    return text_column is not None or any(table_format(f) for f in files)


def table_corpus_name(files: list[str], column: str) -> str:
    """How a message names a table corpus: the user's files and the column read, never the staged text.

    >>> table_corpus_name(["train.csv"], "text")
    "train.csv (column 'text', a row a document)"
    """
    return f"{', '.join(map(str, files))} (column {column!r}, a row a document)"


def corpus_name(files: list[str]) -> str:
    """How a message names a corpus: its files, or for a staged table corpus (TASK_CORPUS with its
    TASK_CORPUS_SOURCE beside it) the user's files and column it was read from."""
    names = []
    for f in map(Path, files):
        source = f.with_name(TASK_CORPUS_SOURCE)
        names.append(source.read_text(encoding="utf-8") if f.name == TASK_CORPUS and source.is_file() else str(f))
    return ", ".join(names)


@contextmanager
def naming_the_users_files(staged: Path, name: str):
    """A ValueError raised inside that names the staged text file names the user's table (`name`) instead:
    the checks downstream read the staged file, but the user can only act on their own."""
    try:
        yield
    except ValueError as e:
        if e.args and isinstance(e.args[0], str) and str(staged) in e.args[0]:
            e.args = (e.args[0].replace(str(staged), name), *e.args[1:])
        raise


def iter_text_column(files: list[str], column: str) -> Iterator[list[str]]:
    """Each record's text in `column` of CSV / TSV / JSON-lines / Parquet files or datasets directories, a
    document of sentences (a record is a document, cut as --format raw cuts one), streamed: a Parquet file or
    a dataset a batch of rows at a time. A record whose text is null or blank is skipped, as a blank line is.
    Errors name the file and line or row (a missing column, or one that holds no text, lists those present)."""
    for path in files:
        table = read_table(path, stream=True)
        table.require_text(text_column=column)
        for row in table.rows:
            if row.get(column) is None or (isinstance(row[column], str) and not row[column].strip()):
                continue
            text = " ".join(row.text(column).split())
            yield split_sentences(text) or [text]


def write_text_corpus(documents: Iterable[list[str]], file: Path) -> int:
    """One sentence per line, a blank line between documents: the corpus format pretraining reads. Streamed
    (a document at a time) and atomic; returns the number of documents."""
    n = 0
    with atomic_path(file) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for doc in documents:
            f.write(("\n" if n else "") + "\n".join(doc) + "\n")
            n += 1
    return n


def _draws_next_sentences(o) -> bool:
    """Whether the job pairs sentences across documents (BERT's NSP), which needs two documents in each split:
    pretrain options (they have a family) whose recipe says so; a distillation never does."""
    return hasattr(o, "family") and Recipe.from_options(o).pair_task == "nsp"


def stage_table_corpus(o, staging: Path):
    """`o` (options with corpus, text_column, format and heldout) itself for a text corpus; for tables
    (`is_table_corpus`) a copy whose corpus is their texts, written a document at a time to staging/TASK_CORPUS
    in the lines format, which every reader of a corpus (tokenizer training, instances, permutation streams)
    then takes as it is. The documents are counted against --heldout (and NSP's two per split) here, so that
    the message names the user's table and column, not the staged file; `corpus_name` does so later."""
    if not is_table_corpus(o.corpus, o.text_column):
        return o
    staged, column = staging / TASK_CORPUS, o.text_column or DEFAULT_TEXT_COLUMN
    name = table_corpus_name(o.corpus, column)
    if not write_text_corpus(iter_text_column(o.corpus, column), staged):
        raise ValueError(f"{', '.join(map(str, o.corpus))}: no text in column {column!r} (every row null or blank)")
    (staging / TASK_CORPUS_SOURCE).write_text(name, encoding="utf-8")
    with naming_the_users_files(staged, name):
        check_corpus_documents([str(staged)], "lines", heldout_value(o.heldout), nsp=_draws_next_sentences(o))
    return replace(o, corpus=[str(staged)], format="lines")
