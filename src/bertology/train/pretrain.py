"""The pretraining job: corpus → tokenizer → instances → model → Trainer → Hugging Face directory.

Each family's defaults follow its paper (its record's `pretraining`, models/family.py): BERT MLM + NSP, static masks
over pairs; RoBERTa MLM only, dynamic masks over FULL-SENTENCES packing, byte-level BPE; ALBERT
MLM + SOP with n-gram masking, factorized embeddings and shared layers; XLNet permutation LM over
streams of text with memory (train/plm.py); ELECTRA replaced-token detection (a generator and the
discriminator, models/electra.py ElectraPair; the discriminator is saved as the model, the generator
in generator/). Every one is overridable. The options become one
`data.recipe.Recipe`, resolved and validated once; the objective comes from train/registry.py by
its name. The sentence objectives (--objective simcse / tsdae: train/sentences.py) read the same
store's texts unmasked and train and save the family's encoder alone (a BertModel directory, say).

The output directory ends up holding config.json + model.safetensors + tokenizer.json (loadable
by bertology.load and transformers' AutoModelForPreTraining / AutoModelForMaskedLM), metrics.jsonl,
checkpoints/ and the instance cache.
"""

from __future__ import annotations

import copy
import math
import tempfile
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ..data import FORMATS, build_store, check_corpus_documents, heldout_value
from ..data.recipe import MASKINGS, OBJECTIVES, PACKINGS, PLM, RTD, SENTENCE_OBJECTIVES, SIMCSE, TSDAE, Recipe
from ..models import PRETRAINABLE, from_config, get_family, task_class
from ..models.checkpoint import absent_parameters, load_state
from ..io import atomic_copy, atomic_write_json, claim_output_dir
from ..models.electra import GENERATOR_DIR, ElectraPair, check_pair_checkpoint, generator_config
from ..models.init_embeddings import init_token_embeddings, read_init_vectors
from ..models.params import count
from ..nn import set_dropout
from ..options import (
    DROPOUT,
    FRACTION_OR_COUNT,
    MASKING_RATE,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_NUMBER,
    Check,
    check_options,
    option,
)
from . import distributed as dist
from .continued import (
    TASK_CORPUS,
    Extension,
    Start,
    check_init,
    check_resume,
    extend_vocabulary,
    generator_note,
    grow_vocabulary,
    resumed_model,
    resumed_pair,
    stage_table_corpus,
    start_model,
    start_pair,
    write_init_record,
)
from .device import say
from .diagnostics import unigram_accuracy, unigram_loss
from .objectives import evaluate_pretraining, evaluate_replaced_token_detection
from .registry import is_sentence_objective, objective_for
from .plm import check_batch as check_permutation_batch, pretrain_permutation_lm
from .sentences import text_batches
from .resume import same_run
from ..tokenizers import Tokenizer, train
from .trainer import (
    DEFAULT_STEPS,
    RunOptions,
    Trainer,
    TrainingArguments,
    checkpoints,
    finished_run,
    run_summary,
    seeded,
)

DEFAULT_GENERATOR_SIZE = 0.25  # ELECTRA's generator: a quarter of the discriminator's width (the paper's best)
# Without --eval-every the held-out text is still scored: about ten times a run, never more often than every
# MIN_EVAL_EVERY steps (each evaluation costs --eval-batches forward passes), and always at the last step.
EVALUATIONS_PER_RUN = 10
MIN_EVAL_EVERY = 100


@dataclass
class PretrainOptions(RunOptions):
    family: str = option(help="the model family", choices=PRETRAINABLE)
    corpus: list[str] = option(
        help="text: one sentence per line, a blank line between documents (or --format raw); "
        ".gz, .xz, .bz2 read as they are; a folder: its files in name order; a Parquet "
        "file or a datasets directory (save_to_disk): a row a document, from "
        "--text-column",
        metavar="FILE",
    )
    out_dir: str = option(help="output directory", flag="--out", metavar="DIR")
    preset: str | None = option(
        None, "tiny, mini, small, medium, base, large (default mini; with --init: the checkpoint's architecture)"
    )
    tokenizer: str | None = option(
        None, "tokenizer.json or directory; default: train the family's tokenizer on the corpus"
    )
    vocab_size: int | None = option(
        None,
        "for a trained tokenizer (default 8000; with --extend-vocab: the domain tokenizer's, default the checkpoint's)",
        check=POSITIVE,
    )
    steps: int | None = option(
        None, "optimizer steps (default 1000; with --time-budget a cap, default none)", check=POSITIVE
    )
    batch_size: int = option(32, "global batch (over accumulation and ranks)", check=POSITIVE)
    seq_len: int = option(128, "tokens per sequence, special tokens included", check=Check("≥ 8", lambda v: v >= 8))
    lr: float = option(5e-4, "peak learning rate", check=POSITIVE_NUMBER)
    warmup: int = option(
        100,
        "warmup steps, then linear decay to 0 (--schedule linear; with --time-budget, --budget-warmup instead)",
        check=NON_NEGATIVE,
    )
    schedule: str = option(
        "linear",
        "linear: warmup then decay (BERT); triangle: from 25% of --lr to the peak at 75% of the steps, then to 0",
        choices=("linear", "triangle"),
    )
    dropout: float | None = option(
        None, "dropout while pretraining (default: the config's 0.1; the saved config keeps it)", check=DROPOUT
    )
    unigram_prior: bool = option(
        True,
        "start the MLM (XLNet: LM) output bias at the corpus's log unigram distribution (--no-unigram-prior: at zero)",
    )
    weight_decay: float = option(0.01, "AdamW's decoupled weight decay", check=NON_NEGATIVE)
    accumulation: int = option(1, "micro-batches per optimizer step", check=POSITIVE)
    max_grad_norm: float = option(1.0, "gradient clipping norm", check=POSITIVE_NUMBER)
    bf16: bool = option(
        False,
        "bf16 autocast (pays where the CPU multiplies bf16 natively: AMX; on a GPU the precision is measured and said)",
    )
    seed: int = option(0, "seeds the model's initial weights, the instances and the masks")
    objective: str | None = option(None, "default: the family's", choices=OBJECTIVES)
    masking: str | None = option(None, "default: static (BERT, ALBERT), dynamic (RoBERTa)", choices=MASKINGS)
    packing: str | None = option(None, "default: pairs with a pair objective, else full-sentences", choices=PACKINGS)
    whole_word: bool = option(False, "mask whole words (WordPiece ##, byte-level Ġ, Unigram ▁)")
    ngram: int | None = option(None, "mask spans of up to N words, p(n) ∝ 1/n (ALBERT default 3)", check=POSITIVE)
    dupe_factor: int = option(
        5, "copies with different static masks (the sentence objectives read each text once a pass)", check=POSITIVE
    )
    mlm_probability: float = option(0.15, "share of tokens masked", check=MASKING_RATE)
    max_predictions: int | None = option(
        None, "cap on masked tokens per sequence (default: seq-len × mlm-probability)", check=POSITIVE
    )
    mem_len: int | None = option(
        None,
        "XLNet: states kept as memory for the next step (default 3/4 of --seq-len, the original's 384 of 512)",
        check=NON_NEGATIVE,
    )
    reuse_len: int | None = option(
        None, "XLNet: tokens of each example continued from the step before (default half of --seq-len)", check=POSITIVE
    )
    num_predict: int | None = option(None, "XLNet: targets per sequence (default 85/512 of --seq-len)", check=POSITIVE)
    perm_size: int | None = option(
        None,
        "XLNet: factorisation-order block (default: the largest dividing both "
        "--reuse-len and the rest, at most half of --seq-len)",
        check=POSITIVE,
    )
    bi_data: bool = option(False, "XLNet: half the batch rows run their text backwards")
    generator_size: float | None = option(
        None,
        "ELECTRA: the generator's hidden width as a fraction of the "
        "discriminator's, in (0, 1] (default 0.25, the paper's best)",
        check=Check("in (0, 1]", lambda v: 0 < v <= 1),
    )
    discriminator_weight: float | None = option(
        None,
        "ELECTRA: λ, the discriminator's loss weight against the generator's MLM (default 50, the paper's)",
        check=POSITIVE_NUMBER,
    )
    sampling_temperature: float | None = option(
        None,
        "ELECTRA: the generator's logits are divided by this before its replacements are sampled "
        "(default 1, google-research/electra's; above 1 the replacements are less plausible, easier to detect)",
        check=POSITIVE_NUMBER,
    )
    temperature: float | None = option(
        None,
        "SimCSE: the cosine similarities are divided by this before the softmax (default 0.05, the paper's)",
        check=POSITIVE_NUMBER,
    )
    deletion_ratio: float | None = option(
        None,
        "TSDAE: share of each text's tokens deleted before the encoder reads it (default 0.6, the paper's)",
        check=Check("in [0, 1)", lambda v: 0 <= v < 1),
    )
    format: str = option("lines", "corpus format", choices=FORMATS)
    heldout: float = option(
        0.05,
        "fraction (or count ≥ 1) of documents held out, drawn by --seed, never trained on; the model is "
        "scored on --eval-batches batches of them every --eval-every steps (default: a tenth of --steps, "
        f"at least {MIN_EVAL_EVERY}; every {MIN_EVAL_EVERY} under --time-budget) and at the end, into "
        "metrics.jsonl and summary.json's eval (0: no held-out text, no evaluation)",
        check=FRACTION_OR_COUNT,
    )
    init_embeddings: str | None = option(
        None,
        "start the token embedding from these word vectors, keyed by the "
        "tokenizer's pieces (`wordvec train --tokenizer`); not on --resume",
        metavar="VECTORS",
    )
    init: str | None = option(
        None,
        "continue pretraining this checkpoint (a Hugging Face or bertology model "
        "directory): its config, weights and tokenizer instead of --preset; ELECTRA: the "
        "discriminator, with its generator from DIR/generator/ or --init-generator, else a "
        "new one at --generator-size",
        metavar="DIR",
    )
    init_generator: str | None = option(
        None,
        "ELECTRA with --init: the generator to continue beside the "
        "discriminator (an ElectraForMaskedLM directory, as "
        "google/electra-small-generator ships); default DIR/generator/",
        metavar="DIR",
    )
    extend_vocab: int | None = option(
        None,
        "with --init: add the N most frequent pieces of a tokenizer trained on the "
        "corpus that the checkpoint's splits into several, each row the mean of "
        "its pieces'",
        check=POSITIVE,
        metavar="N",
    )
    text_column: str | None = option(
        None,
        "read the --corpus files as tables (CSV / TSV / JSON lines / Parquet / a "
        "datasets directory) and pretrain on this column's texts, a record a "
        "document (task-adaptive pretraining); a Parquet or datasets --corpus "
        "is read so without it, from its 'text' column",
        metavar="NAME",
    )
    config_overrides: dict[str, Any] = option(default_factory=dict, cli=False)

    def __post_init__(self):
        check_options(self)
        if self.init is None:
            if self.extend_vocab is not None:
                raise ValueError(
                    f"--extend-vocab {self.extend_vocab}: needs --init DIR, the checkpoint whose vocabulary it extends"
                )
            if self.init_generator is not None:
                raise ValueError(
                    f"--init-generator {self.init_generator}: needs --init DIR, the discriminator it continues beside"
                )
            self.preset = self.preset or "mini"
            self.vocab_size = self.vocab_size or 8000
        if self.extend_vocab is not None and not self.corpus:
            raise ValueError(f"--extend-vocab {self.extend_vocab}: needs --corpus, the text the new pieces come from")


def _tokenizer(o: PretrainOptions, out: Path, resume: bool, given):
    """The run's tokenizer, written to out/tokenizer.json: the checkpoint's own on resume, the
    user's (`given`, read from --tokenizer), or the family's trained on the corpus."""
    saved = out / "tokenizer.json"
    if resume:
        if not saved.is_file():
            raise FileNotFoundError(f"{saved}: missing, so the run in {out} cannot be resumed")
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


def _model(o: PretrainOptions, tok, recipe: Recipe):
    record = get_family(o.family)
    pad = tok.token_to_id(record.specials.pad)
    if pad is None:
        raise ValueError(f"tokenizer has no {record.specials.pad} token, which {o.family} pads with")
    config = record.preset(o.preset, vocab_size=tok.vocab_size, pad_token_id=pad, **o.config_overrides)
    if "max_position_embeddings" not in o.config_overrides:  # sized to the sequences (checked against the preset)
        config.max_position_embeddings = max(o.seq_len + config.position_offset, 64)
    if recipe.objective == RTD:  # the discriminator trains beside its generator
        model = ElectraPair(config, o.generator_size or DEFAULT_GENERATOR_SIZE)
    else:
        model = task_class(o.family, recipe.head)(config)
    return model if o.dropout is None else set_dropout(model, o.dropout)


def _builder(o: PretrainOptions, start: Start, extension: Extension | None, resume: bool, pair: bool):
    """How an --init run builds its model, for the MLM job and the permutation-LM job alike:
    (head, the run's tokenizer, config fields that shape no weight) → (model, whether its output bias is new).
    With `pair` (ELECTRA's rtd) the model is the generator and discriminator pair."""
    size = o.generator_size or DEFAULT_GENERATOR_SIZE

    def build(head: str, tok, **overrides):
        if resume:  # the run's own checkpoint holds every weight, the grown vocabulary's too
            vocab = max(start.config.vocab_size, tok.vocab_size)
            model, new = (
                (resumed_pair(start, size, vocab) if pair else resumed_model(start, head, vocab, **overrides)),
                [],
            )
        else:
            model, new = start_pair(start, size) if pair else start_model(start, head, **overrides)
            heads = [n for n in new if n != "generator"]  # the pair's generator is said on its own line
            if heads:
                mlm = {"mlm", "lm_loss"} & set(heads)
                say(
                    f"--init {start.path}: no {', '.join(heads)} in the checkpoint: built new (the family's "
                    "initialisation"
                    + (", the MLM decoder tied to the word embeddings" if mlm else "")
                    + (", the output bias from the corpus's unigram prior)" if mlm and o.unigram_prior else ")")
                )
            else:
                say(f"--init {start.path}: every weight of {model.architecture} taken from the checkpoint")
            if pair:
                say(generator_note(start, model, o.unigram_prior))
            elif (start.path / GENERATOR_DIR).is_dir():  # ELECTRA under --objective mlm: no generator to train
                say(
                    f"--init {start.path}: {start.path / GENERATOR_DIR} is not used: --objective mlm trains the "
                    "discriminator's encoder with an MLM head and no generator"
                )
            if extension is not None:
                model = grow_vocabulary(model, extension.old_ids)
                say(str(extension))
        model = model if o.dropout is None else set_dropout(model, o.dropout)
        return model, bool({"mlm", "lm_loss", "generator"} & set(new))

    return build


def _check_model_options(o: PretrainOptions, recipe: Recipe) -> None:
    """The preset, the config overrides, --seq-len against the preset's positions and the
    objective against the family's heads, before any work."""
    record = get_family(o.family)
    try:
        config = record.preset(o.preset, **o.config_overrides)
    except TypeError as e:
        raise ValueError(f"config overrides {o.config_overrides}: {e}") from None
    if o.seq_len > config.max_length:
        raise ValueError(
            f"--seq-len {o.seq_len} is longer than the {config.max_length} positions of the "
            f"{o.family}-{o.preset} preset"
        )
    recipe.check_model()
    _check_generator_size(o, recipe, config)


def _check_generator_size(o: PretrainOptions, recipe: Recipe, config) -> None:
    """--generator-size only for ELECTRA's rtd; the new generator it makes of the discriminator's `config`
    can split its heads (`config` None: the generator is loaded, continued.check_generator checked it)."""
    for flag, value, objective in (
        ("--generator-size", o.generator_size, RTD),
        ("--discriminator-weight", o.discriminator_weight, RTD),
        ("--sampling-temperature", o.sampling_temperature, RTD),
        ("--temperature", o.temperature, SIMCSE),
        ("--deletion-ratio", o.deletion_ratio, TSDAE),
    ):
        if value is not None and recipe.objective != objective:
            owner = "an ELECTRA option (objective rtd)" if objective == RTD else f"a {objective} option"
            raise ValueError(f"{flag} is {owner}, not for {o.family} / {recipe.objective}")
    if recipe.objective == RTD and config is not None:
        generator_config(
            config, o.generator_size or DEFAULT_GENERATOR_SIZE
        )  # a size whose heads cannot split fails here


def default_eval_every(steps: int | None, time_budget: float | None) -> int:
    """--eval-every when not given: a tenth of the steps, at least MIN_EVAL_EVERY (a shorter run is
    scored at its last step only); under a time budget, whose step count is not known, MIN_EVAL_EVERY.

    >>> default_eval_every(1000, None), default_eval_every(50_000, None), default_eval_every(6, None)
    (100, 5000, 100)
    >>> default_eval_every(None, None), default_eval_every(50_000, 30.0)
    (100, 100)
    """
    if time_budget is not None:
        return MIN_EVAL_EVERY
    return max(MIN_EVAL_EVERY, math.ceil((steps or DEFAULT_STEPS) / EVALUATIONS_PER_RUN))


def pretrain(o: PretrainOptions, resume: bool = False, overwrite: bool = False) -> dict[str, Any]:
    """Run (or continue) a pretraining job; returns its summary (also written to out/summary.json).

    Everything is checked before the first write: the options, the device, the corpus files, a
    given tokenizer, an --init checkpoint against the options, and the output directory (a
    directory of the user's is refused; an earlier run of ours is continued with `resume` or
    started afresh with `overwrite`).
    """
    with tempfile.TemporaryDirectory() as staging:  # a labelled file's texts, until the output directory is ours
        return _checked_pretrain(o, resume, overwrite, Path(staging))


def _checked_pretrain(o: PretrainOptions, resume: bool, overwrite: bool, staging: Path) -> dict[str, Any]:
    device = dist.rank_device(o.device, say)  # a GPU asked for and absent fails here, before any write
    asked = o  # the options as given (a labelled file's texts are staged below): what a resume compares
    recipe = Recipe.from_options(o)  # the options' recipe, validated once; every step below reads it
    start = (
        check_init(o, recipe.head) if o.init is not None else None
    )  # the checkpoint read and checked against the options
    if start is None:
        _check_model_options(o, recipe)
    else:
        recipe.check_model()
        _check_generator_size(o, recipe, start.config if start.generator is None else None)
    if recipe.objective in SENTENCE_OBJECTIVES:  # e.g. SimCSE without dropout: refused before any write
        config = start.config if start is not None else get_family(o.family).preset(o.preset, **o.config_overrides)
        objective_for(recipe.objective, o).check(o, config)
    if recipe.objective == PLM:
        check_permutation_batch(o, recipe)
    o = stage_table_corpus(o, staging)  # a labelled file's texts (task-adaptive), a Parquet / datasets corpus
    staged = staging / TASK_CORPUS if o is not asked else None
    check_corpus_documents(o.corpus, o.format, heldout_value(o.heldout), nsp=recipe.pair_task == "nsp")
    # a bad tokenizer file fails now, not after the output directory is set up
    given = start.tokenizer if start is not None else Tokenizer.load(o.tokenizer) if o.tokenizer is not None else None
    vectors = (
        read_init_vectors(o.init_embeddings, get_family(o.family).preset(o.preset, **o.config_overrides))
        if o.init_embeddings is not None
        else None
    )
    dist.init_from_env(device)
    out = Path(o.out_dir)
    continuing = resume and out.is_dir() and bool(checkpoints(out))
    if continuing:
        check_resume(o, out)  # the same --init (or none) as the run it continues
    extension = None
    if start is not None and o.extend_vocab and not continuing:
        extension = extend_vocabulary(
            start.tokenizer,
            o.corpus,
            o.extend_vocab,
            o.family,
            start.config.vocab_size,
            o.vocab_size,
            show_progress=not o.quiet and dist.is_main(),
        )
        given = extension.tokenizer
    if dist.is_main():
        claim_output_dir(out, "pretrain", resume=resume, overwrite=overwrite)
    dist.barrier()
    if resume and not checkpoints(out):  # killed before its first checkpoint: nothing to continue, start again
        resume, overwrite = False, True
    if resume and recipe.objective == RTD:  # before anything is written: a checkpoint without its generator
        check_pair_checkpoint(checkpoints(out)[-1])
    same_run(out, asked, resume)  # a resume with options that change the run is refused here, before any write
    if resume and (done := finished_run(out, o.run_arguments(o.steps))) is not None:
        return done  # complete under these options: its model, checkpoints and summary stay as they are
    if staged is not None:  # the table's texts, kept with the run (a resume reads them there)
        if dist.is_main():
            atomic_copy(staged, out / TASK_CORPUS)
        dist.barrier()
        o = replace(o, corpus=[str(out / TASK_CORPUS)])
    if not resume and dist.is_main():
        write_init_record(o, out, extension)
    sentences = recipe.objective in SENTENCE_OBJECTIVES  # the encoder alone: built by _sentence_encoder
    build = (
        _builder(o, start, extension, resume, recipe.objective == RTD) if start is not None and not sentences else None
    )
    if o.eval_every is None:  # the held-out slice is scored by default (the Trainer also scores the last step)
        o = replace(o, eval_every=default_eval_every(o.steps, o.time_budget))
    with seeded(o.seed):  # the model's initial weights and dropout: torch's global state is left as it was
        return _pretrain(o, recipe, out, resume, overwrite, given, device, vectors, build, extension, start)


def _pretrain(
    o: PretrainOptions,
    recipe: Recipe,
    out: Path,
    resume: bool,
    overwrite: bool,
    given,
    device: torch.device,
    vectors=None,
    build=None,
    extension=None,
    start: Start | None = None,
) -> dict[str, Any]:
    tok = _tokenizer(o, out, resume, given)
    if recipe.objective == PLM:  # permutation LM over streams of text, memory carried: train/plm.py
        return pretrain_permutation_lm(
            o, recipe, out, tok, resume, overwrite, heldout_value(o.heldout), device, build=build, vectors=vectors
        )

    if not dist.is_main():
        dist.barrier()  # rank 0 builds the cache, the others then open it
    store = build_store(
        o.corpus,
        tok,
        recipe,
        seed=o.seed,
        cache_dir=out / "cache",
        format=o.format,
        heldout=heldout_value(o.heldout),
        show_progress=not o.quiet and dist.is_main(),
    )
    if dist.is_main():
        dist.barrier()
    if store.num_instances < o.batch_size:
        raise ValueError(
            f"{', '.join(o.corpus)}: {store.num_instances} instances of length {o.seq_len}, fewer than one batch "
            f"of {o.batch_size}; use a larger corpus, a smaller --batch-size or --seq-len, or a larger --dupe-factor"
        )
    objective = objective_for(recipe.objective, o)
    if is_sentence_objective(objective):
        encoder = _sentence_encoder(o, tok, start, extension, resume, recipe.objective)
        return _pretrain_sentences(
            o, recipe, objective, encoder, out, resume, overwrite, tok, store, device, vectors, extension
        )
    model, new_bias = build(recipe.head, tok) if build is not None else (_model(o, tok, recipe), True)
    init = (
        init_token_embeddings(model, tok, vectors, o.init_embeddings, log=not o.quiet and dist.is_main())
        if vectors is not None and not resume
        else None
    )  # on resume the checkpoint holds the embedding
    counts = store.token_counts(model.config.vocab_size)
    if o.unigram_prior and not resume and new_bias:  # a head loaded from --init keeps its trained bias
        model.mlm.init_bias_from_counts(counts)
    args = TrainingArguments.from_options(o, out, overwrite, device=str(device))
    heldout = store.heldout
    evaluate = None
    if heldout is not None and heldout.num_instances:
        n_eval = max(1, min(o.eval_batches, math.ceil(heldout.num_instances / o.batch_size)))
        eval_size = min(o.batch_size, heldout.num_instances)
        eval_batches = [heldout.batch(i, eval_size, seed=o.seed + 1) for i in range(n_eval)]

        def evaluate(m):
            scores = (
                evaluate_replaced_token_detection(m, eval_batches, objective.temperature)
                if recipe.objective == RTD
                else evaluate_pretraining(m, eval_batches)
            )
            return {**scores, **unigram}

        eval_labels = torch.cat([b["labels"].flatten() for b in eval_batches])
        unigram = {
            "unigram_accuracy": unigram_accuracy(counts, eval_labels),
            "unigram_loss": unigram_loss(counts, eval_labels),
        }

    trainer = Trainer(
        model,
        args,
        lambda step: store.batch(step, o.batch_size),
        objective,
        evaluate,
        save_extra=lambda d: tok.save(d / "tokenizer.json"),
    )
    result = trainer.train(resume=resume)
    return _finish(o, recipe, model, out, trainer, result, store, init, extension)


def _finish(o: PretrainOptions, recipe: Recipe, model, out: Path, trainer, result, store, init, extension):
    """The run's summary, and the final model beside tokenizer.json (main process, uninterrupted run only)."""
    summary = {
        "family": o.family,
        "preset": o.preset,
        "architecture": model.architecture,
        "objective": recipe.objective,
        "parameters": model.num_parameters(),
        "resumed_from": trainer.resumed_from,
        "tokens": result["step"] * o.batch_size * o.seq_len,
        "instances": store.num_instances,
        "init_embeddings": init.summary() if init is not None else None,
        "init": None if o.init is None else {"path": o.init, "extension": extension.summary() if extension else None},
        "flops_per_token": count(model.config, seq_length=o.seq_len).flops_per_token["total"],
        **run_summary(trainer, result),
        "options": {k: v for k, v in asdict(o).items() if k != "config_overrides"},
    }
    if dist.is_main() and not result["interrupted"]:
        model.save(out)
        atomic_write_json(out / "summary.json", summary)
    return summary


# ---- the sentence objectives (train/sentences.py) ------------------------------------------------------


def _sentence_encoder(o: PretrainOptions, tok, start: Start | None, extension, resume: bool, name: str):
    """The encoder a sentence objective trains: the family's backbone with its pooler (so that the saved
    directory loads as the family's Model), new at --preset, or --init's backbone with its heads left out."""
    record = get_family(o.family)
    if start is None:
        pad = tok.token_to_id(record.specials.pad)
        if pad is None:
            raise ValueError(f"tokenizer has no {record.specials.pad} token, which {o.family} pads with")
        config = record.preset(o.preset, vocab_size=tok.vocab_size, pad_token_id=pad, **o.config_overrides)
        if "max_position_embeddings" not in o.config_overrides:  # sized to the sequences, as _model does
            config.max_position_embeddings = max(o.seq_len + config.position_offset, 64)
        encoder = from_config(config, record.backbone)
    elif resume:  # the run's own checkpoint holds every weight, a grown vocabulary's too
        config = copy.deepcopy(start.config)
        config.vocab_size = max(config.vocab_size, tok.vocab_size)
        encoder = from_config(config, record.backbone)
    else:
        encoder = from_config(copy.deepcopy(start.config), record.backbone)
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
            encoder = grow_vocabulary(encoder, extension.old_ids)
            say(str(extension))
    return encoder


def _pretrain_sentences(
    o: PretrainOptions,
    recipe: Recipe,
    objective,
    encoder,
    out: Path,
    resume,
    overwrite,
    tok,
    store,
    device,
    vectors,
    extension,
) -> dict[str, Any]:
    """A sentence objective on the same store (its texts unmasked), Trainer and checkpoints; the encoder is saved."""
    init = (
        init_token_embeddings(encoder, tok, vectors, o.init_embeddings, log=not o.quiet and dist.is_main())
        if vectors is not None and not resume
        else None
    )
    model = objective.model(encoder)
    if o.dropout is not None:  # the decoder's too
        set_dropout(model, o.dropout)
    evaluate = None
    heldout = store.heldout
    if heldout is not None and heldout.num_instances:
        size = min(o.batch_size, heldout.num_instances)
        held = text_batches(heldout, size, o.seed + 1, objective.prepare)
        eval_batches = [held(i) for i in range(max(1, min(o.eval_batches, math.ceil(heldout.num_instances / size))))]

        def evaluate(m):
            return objective.evaluate(m, eval_batches)

    trainer = Trainer(
        model,
        TrainingArguments.from_options(o, out, overwrite, device=str(device)),
        text_batches(store, o.batch_size, o.seed, objective.prepare),
        objective,
        evaluate,
        save_extra=lambda d: tok.save(d / "tokenizer.json"),
    )
    result = trainer.train(resume=resume)
    return _finish(o, recipe, objective.encoder(model), out, trainer, result, store, init, extension)
