"""`bertology pretrain`'s options, and the checks on them that need no file: the preset against the sequence
length, each objective's own options against the objective chosen, the default evaluation cadence.

Each family's defaults follow its paper (its record's `pretraining`, models/family.py); every one is
overridable, and the options become one `data.recipe.Recipe`, resolved and validated once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..data.recipe import MASKINGS, OBJECTIVES, PACKINGS, PLM, RTD, SENTENCE_OBJECTIVES, SIMCSE, TSDAE, Recipe
from ..models import PRETRAINABLE, get_family
from ..models.electra import generator_config
from ..options import (
    FRACTION_OR_COUNT,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_NUMBER,
    Check,
    accepts_old_names,
    check_options,
    refuse_unread,
    option,
)
from .arguments import DEFAULT_STEPS, CorpusOptions, check_job_options

DEFAULT_GENERATOR_SIZE = 0.25  # ELECTRA's generator: a quarter of the discriminator's width (the paper's best)
# Without --eval-every the held-out text is still scored: about ten times a run, never more often than every
# MIN_EVAL_EVERY steps (each evaluation costs --eval-batches forward passes), and always at the last step.
EVALUATIONS_PER_RUN = 10
MIN_EVAL_EVERY = 100


@accepts_old_names
@dataclass
class PretrainOptions(CorpusOptions):
    family: str = option(help="the model family", choices=PRETRAINABLE)
    corpus: list[str] = option(
        help="text: one sentence per line, a blank line between documents (or --format raw); "
        ".gz, .xz, .bz2 read as they are; a folder: its text, Parquet and datasets files, recursively in "
        "name order (other files skipped, and said); a Parquet file or a datasets directory (save_to_disk): "
        "a row a document, from --text-column",
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
    schedule: str = option(
        "linear",
        "linear: warmup then decay (BERT); triangle: from 25% of --lr to the peak at 75% of the steps, then to 0",
        choices=("linear", "triangle"),
    )
    unigram_prior: bool = option(
        True,
        "start the MLM (XLNet: LM) output bias at the corpus's log unigram distribution (--no-unigram-prior: at zero)",
    )
    objective: str | None = option(None, "default: the family's", choices=OBJECTIVES)
    masking: str | None = option(None, "default: static (BERT, ALBERT), dynamic (RoBERTa)", choices=MASKINGS)
    packing: str | None = option(None, "default: pairs with a pair objective, else full-sentences", choices=PACKINGS)
    whole_word: bool = option(False, "mask whole words (WordPiece ##, byte-level Ġ, Unigram ▁)")
    ngram: int | None = option(None, "mask spans of up to N words, p(n) ∝ 1/n (ALBERT default 3)", check=POSITIVE)
    dupe_factor: int = option(
        5, "copies with different static masks (the sentence objectives read each text once a pass)", check=POSITIVE
    )
    max_predictions: int | None = option(
        None, "cap on masked tokens per sequence (default: max-length × mlm-probability)", check=POSITIVE
    )
    mem_len: int | None = option(
        None,
        "XLNet: states kept as memory for the next step (default 3/4 of --max-length, the original's 384 of 512)",
        check=NON_NEGATIVE,
    )
    reuse_len: int | None = option(
        None,
        "XLNet: tokens of each example continued from the step before (default half of --max-length)",
        check=POSITIVE,
    )
    num_predict: int | None = option(
        None, "XLNet: targets per sequence (default 85/512 of --max-length)", check=POSITIVE
    )
    perm_size: int | None = option(
        None,
        "XLNet: factorisation-order block (default: the largest dividing both "
        "--reuse-len and the rest, at most half of --max-length)",
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
    config_overrides: dict[str, Any] = option(default_factory=dict, cli=False)

    def __post_init__(self):
        check_options(self)
        check_job_options(self)
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


def check_model_options(o: PretrainOptions, recipe: Recipe) -> None:
    """The preset, the config overrides, --max-length against the preset's positions and the
    objective against the family's heads, before any work."""
    record = get_family(o.family)
    try:
        config = record.preset(o.preset, **o.config_overrides)
    except TypeError as e:
        raise ValueError(f"config overrides {o.config_overrides}: {e}") from None
    if o.max_length > config.max_length:
        raise ValueError(
            f"--max-length {o.max_length} is longer than the {config.max_length} positions of the "
            f"{o.family}-{o.preset} preset"
        )
    recipe.check_model()
    check_objective_options(o, recipe, config)


def check_objective_options(o: PretrainOptions, recipe: Recipe, config) -> None:
    """Each objective's options only with that objective (--generator-size with ELECTRA's rtd, …), and the
    new generator made of the discriminator's `config` can split its heads (`config` None: the generator is
    loaded; start.check_generator checked it)."""
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
    if recipe.objective != PLM:
        refuse_unread(o, ("mem_len", "reuse_len", "num_predict", "perm_size", "bi_data"), "XLNet's permutation LM")
    else:  # a stream is read once a pass, its targets counted by --num-predict
        refuse_unread(o, ("dupe_factor", "mlm_probability"), "the masked objectives (not XLNet's permutation LM)")
    if recipe.objective in SENTENCE_OBJECTIVES:  # no output layer over the vocabulary, nothing masked
        refuse_unread(
            o, ("unigram_prior", "mlm_probability"), "the objectives that predict tokens (not " + recipe.objective + ")"
        )
        refuse_unread(o, ("dupe_factor",), "the masked objectives (a sentence objective reads each text once a pass)")
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
