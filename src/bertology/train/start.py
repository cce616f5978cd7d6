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

Vocabulary extension is tokenizers/extend.py (the pieces) and models/resize.py (the rows); a table
corpus is staged by data/staging.py. Nothing here is a second training loop or a second model class:
the model is the family's own, and the pretraining job runs it as it runs a preset's.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from ..io import atomic_write_json
from ..models import PRETRAINABLE, get_family, task_class
from ..models.checkpoint import (
    CheckpointError,
    absent_parameters,
    load_state,
    read_config,
    read_weights,
)
from ..models.checkpoint import (
    check_tokenizer as check_model_tokenizer,
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
from ..tokenizers import Tokenizer
from ..tokenizers.extend import Extension

CONTINUABLE = PRETRAINABLE  # the families --init continues: every one that pretrains here


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
    if family != "xlnet" and o.max_length > config.max_length:  # XLNet's positions are relative: any length
        raise ValueError(f"--max-length {o.max_length} is longer than the {config.max_length} positions of {where}")
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


# ---- the run's record of its start, for --resume ------------------------------------------------------

INIT_RECORD = "init.json"  # in the output directory: which checkpoint (and extension) the run continues


def init_record(o) -> dict:
    return {"init": os.path.abspath(o.init) if o.init else None, "extend_vocab": o.extend_vocab}


def check_same_start(o, out: Path) -> None:
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
