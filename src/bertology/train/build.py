"""What a pretraining run builds before its first step: its tokenizer and the model it trains.

    tok = tokenizer_for(options, run, given)             # trained, given, loaded from --init, or extended
    model, init = model_for(options, recipe, tok, data, objective, run, start)

The model is new at --preset, or --init's checkpoint (train/start.py) with the heads it lacks built new,
its vocabulary grown by --extend-vocab (models/resize.py), or on --resume the run's own architecture
(its checkpoint then holds every weight). A fresh token embedding may start from word vectors
(--init-embeddings), a new output bias from the corpus's unigram distribution. A sentence objective
trains the family's encoder alone, inside the objective's model (SimCSE: the encoder; TSDAE: the
encoder and a decoder).
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import torch

from ..data.recipe import RTD, Recipe
from ..models import from_config, get_family, task_class
from ..models.checkpoint import absent_parameters, load_state
from ..models.electra import GENERATOR_DIR, ElectraPair
from ..models.heads import init_bias_from_counts
from ..models.init_embeddings import init_token_embeddings
from ..models.resize import resize_vocabulary
from ..nn import set_dropout
from ..tokenizers import Tokenizer, train
from ..tokenizers.extend import Extension
from . import distributed as dist
from .device import say
from .pretrain_data import PretrainData
from .pretrain_options import DEFAULT_GENERATOR_SIZE, PretrainOptions
from .registry import is_sentence_objective
from .run import Run
from .start import Start, generator_note, resumed_model, resumed_pair, start_model, start_pair


def tokenizer_for(o: PretrainOptions, run: Run, given: Tokenizer | None) -> Tokenizer:
    """The run's tokenizer, written to out/tokenizer.json: the checkpoint's own on resume, `given` (read
    from --tokenizer or --init, or --init's extended by --extend-vocab), or the family's trained on the corpus."""
    saved = run.out / "tokenizer.json"
    if run.resume:
        if not saved.is_file():
            raise FileNotFoundError(f"{saved}: missing, so the run in {run.out} cannot be resumed")
        return Tokenizer.load(saved)  # the vocabulary the checkpoint was trained with
    if given is not None:
        tok = given
    elif dist.is_main():
        record = get_family(o.family)
        tok = train(
            o.corpus,
            family=record.tokenizer,
            vocab_size=o.vocab_size,
            show_progress=not o.quiet,
            **dict(record.tokenizer_options),
        )
    if dist.is_main():
        tok.save(saved)
    dist.barrier()
    return Tokenizer.load(saved)


def model_for(
    o: PretrainOptions,
    recipe: Recipe,
    tok: Tokenizer,
    data: PretrainData,
    objective,
    run: Run,
    start: Start | None = None,
    extension: Extension | None = None,
    vectors=None,
):
    """(the model the Trainer trains, the --init-embeddings record or None)."""
    if is_sentence_objective(objective):
        model, new_bias = _sentence_encoder(o, tok, start, extension, run.resume, recipe.objective), False
    elif start is None:
        model, new_bias = _fresh_model(o, tok, recipe, data.config_fields), True
    else:
        model, new_bias = _continued_model(o, start, extension, run.resume, recipe, tok, data.config_fields)
    init = (
        init_token_embeddings(model, tok, vectors, o.init_embeddings, log=not o.quiet and dist.is_main())
        if vectors is not None and not run.resume
        else None
    )  # on resume the checkpoint holds the embedding
    if o.unigram_prior and not run.resume and new_bias:  # a head loaded from --init keeps its trained bias
        counts = data.token_counts(model.config.vocab_size)
        init_bias_from_counts(model.mlm.bias if hasattr(model, "mlm") else model.lm_loss.bias, counts)
    if is_sentence_objective(objective):
        model = objective.model(model)  # the encoder, or the encoder and its decoder
    return (model if o.dropout is None else set_dropout(model, o.dropout)), init


def _config(o: PretrainOptions, tok: Tokenizer, fields: dict):
    """The preset's config with the tokenizer's vocabulary and pad id, positions sized to the sequences."""
    record = get_family(o.family)
    pad = tok.token_to_id(record.specials.pad)
    if pad is None:
        raise ValueError(f"tokenizer has no {record.specials.pad} token, which {o.family} pads with")
    config = record.preset(o.preset, vocab_size=tok.vocab_size, pad_token_id=pad, **{**fields, **o.config_overrides})
    if "max_position_embeddings" not in o.config_overrides:  # checked against the preset by check_model_options
        config.max_position_embeddings = max(o.max_length + config.position_offset, 64)
    return config


def _fresh_model(o: PretrainOptions, tok: Tokenizer, recipe: Recipe, fields: dict) -> torch.nn.Module:
    config = _config(o, tok, fields)
    if recipe.objective == RTD:  # the discriminator trains beside its generator
        return ElectraPair(config, o.generator_size or DEFAULT_GENERATOR_SIZE)
    return task_class(o.family, recipe.head)(config)


def _continued_model(
    o: PretrainOptions, start: Start, extension, resume: bool, recipe: Recipe, tok: Tokenizer, fields: dict
) -> tuple[torch.nn.Module, bool]:
    """--init's model for the recipe's head (ELECTRA's rtd: the generator and discriminator pair); returns it
    and whether its output bias is new. The log says what came from the checkpoint and what was built new."""
    size, pair, head = o.generator_size or DEFAULT_GENERATOR_SIZE, recipe.objective == RTD, recipe.head
    if resume:  # the run's own checkpoint holds every weight, the grown vocabulary's too
        vocab = max(start.config.vocab_size, tok.vocab_size)
        return (resumed_pair(start, size, vocab) if pair else resumed_model(start, head, vocab, **fields)), False
    model, new = start_pair(start, size) if pair else start_model(start, head, **fields)
    heads = [n for n in new if n != "generator"]  # the pair's generator is said on its own line
    if heads:
        mlm = {"mlm", "lm_loss"} & set(heads)
        say(
            f"--init {start.path}: no {', '.join(heads)} in the checkpoint: built new (the family's initialisation"
            + (", the MLM decoder tied to the word embeddings" if mlm else "")
            + (", the output bias from the corpus's unigram prior)" if mlm and o.unigram_prior else ")")
        )
    else:
        say(f"--init {start.path}: every weight of {model.architecture} taken from the checkpoint")
    if pair:
        say(generator_note(start, model, o.unigram_prior))
    elif (Path(start.path) / GENERATOR_DIR).is_dir():  # ELECTRA under --objective mlm: no generator to train
        say(
            f"--init {start.path}: {start.path / GENERATOR_DIR} is not used: --objective mlm trains the "
            "discriminator's encoder with an MLM head and no generator"
        )
    if extension is not None:
        model = resize_vocabulary(model, extension.old_ids)
        say(str(extension))
    return model, bool({"mlm", "lm_loss", "generator"} & set(new))


def _sentence_encoder(o: PretrainOptions, tok: Tokenizer, start: Start | None, extension, resume: bool, name: str):
    """The encoder a sentence objective trains: the family's backbone with its pooler (so that the saved
    directory loads as the family's Model), new at --preset, or --init's backbone with its heads left out."""
    record = get_family(o.family)
    if start is None:
        return from_config(_config(o, tok, {}), record.backbone)
    config = copy.deepcopy(start.config)
    if resume:  # the run's own checkpoint holds every weight, a grown vocabulary's too
        config.vocab_size = max(config.vocab_size, tok.vocab_size)
        return from_config(config, record.backbone)
    encoder = from_config(config, record.backbone)
    absent = absent_parameters(encoder, start.tensors)  # the pooler at most: check_init made sure of the rest
    with warnings.catch_warnings():  # the checkpoint's heads are unexpected here, and said below
        warnings.simplefilter("ignore")
        load_state(encoder, start.tensors, start.source, strict=False)
    say(
        f"--init {start.path}: its encoder continues under --objective {name}; the checkpoint's heads are "
        "neither trained nor saved"
        + ("; it has no pooler: a new one (mean pooling does not read it)" if absent else "")
    )
    if extension is not None:
        encoder = resize_vocabulary(encoder, extension.old_ids)
        say(str(extension))
    return encoder
