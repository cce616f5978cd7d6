"""One record per model family: the only table a new family adds a row to.

Everything the rest of the project needs to know about a family lives in its `Family`: the
config class (and with it the presets and config.json keys), the class names of its backbone and
heads, the transformers parameter names, the tokenizer it is trained with, the special tokens its
instances are built from, and how its paper pretrained it.

    >>> get_family("roberta").specials.pad
    '<pad>'
    >>> get_family("albert").pretraining.objective
    'mlm+sop'
    >>> get_family("distilbert").tokenizer                 # DistilBERT reuses BERT's WordPiece
    'bert'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import hf_names
from .config import (
    AlbertConfig,
    BertConfig,
    DistilBertConfig,
    ElectraConfig,
    EncoderConfig,
    RobertaConfig,
    XLNetConfig,
)


@dataclass(frozen=True)
class Specials:
    """The special tokens, by role, that pretraining instances are built from."""

    cls: str
    sep: str
    mask: str
    pad: str
    eod: str | None = None  # ends each document of a text stream (XLNet: </s>; its tokenizer has no <eod>)


@dataclass(frozen=True)
class Pretraining:
    """How the family's paper pretrained it; every field is overridable per run."""

    objective: str  # mlm+nsp | mlm+sop | mlm | plm (XLNet's permutation LM) | rtd (ELECTRA's replaced-token detection)
    packing: str  # pairs | full-sentences | doc-sentences | streams (XLNet: a text stream per batch row)
    masking: str  # static (masks drawn once, dupe_factor copies) | dynamic (drawn per batch) | permutation
    ngram: int = 1  # mask spans of up to n words (ALBERT: 3)


@dataclass(frozen=True)
class Family:
    name: str  # config.json's model_type
    config: type[EncoderConfig]  # presets, defaults and config.json keys
    class_prefix: str  # "Bert": BertModel, BertForMaskedLM, … (transformers' class names)
    heads: tuple[str, ...]  # the task heads it has, e.g. "ForMaskedLM"
    names: hf_names.NameMap  # parameter names in transformers' layout
    tokenizer: str  # the tokenizer kind it is trained with (tokenizers.training.KINDS)
    tokenizer_algorithm: str  # how the docs and the demo call that tokenizer
    specials: Specials
    pretraining: Pretraining | None = None  # None: not pretrained from scratch here (DistilBERT is distilled)
    task_heads: tuple[tuple[str, str], ...] = ()  # (task's head, this family's) where they differ
    # options its tokenizer is trained with when a job trains one (tokenizers.train keyword arguments)
    tokenizer_options: tuple[tuple[str, Any], ...] = ()
    summary_head: bool = False  # its sentence head is its own sequence summary (XLNet): no mean pooling
    # how a prompt reaches its pretrained head (ForPromptClassification, no transformers twin): "mlm" = the
    # masked LM scores label words at the mask; "rtd" = the discriminator judges each label word in place
    prompts: str | None = "mlm"

    def task_head(self, head: str) -> str:
        """The head a fine-tuning task builds: get_family("xlnet").task_head("ForQuestionAnswering") is its
        span head with start / end logits (ForQuestionAnsweringSimple), not the start-end beam."""
        return dict(self.task_heads).get(head, head)

    @property
    def segments(self) -> bool:
        """Whether token type ids carry anything (RoBERTa has one type, DistilBERT none)."""
        return self.config.type_vocab_size > 1

    @property
    def backbone(self) -> str:
        return self.class_prefix + "Model"

    def class_name(self, head: str) -> str:
        """The architecture name of a head: get_family("albert").class_name("ForMaskedLM") is AlbertForMaskedLM."""
        if head not in self.heads and not (head == PROMPT_HEAD and self.prompts):
            raise ValueError(f"{self.name} has no {head} head; it has {', '.join(self.heads)}")
        return self.class_prefix + head

    def preset(self, size: str, **overrides: Any) -> EncoderConfig:
        return self.config.preset(size, **overrides)


_TASK_HEADS = (
    "ForMaskedLM",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
)
PROMPT_HEAD = "ForPromptClassification"
_BERT_SPECIALS = Specials(cls="[CLS]", sep="[SEP]", mask="[MASK]", pad="[PAD]")

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "bert",
            BertConfig,
            "Bert",
            ("ForPreTraining", "ForNextSentencePrediction") + _TASK_HEADS,
            hf_names.BERT,
            tokenizer="bert",
            tokenizer_algorithm="WordPiece",
            specials=_BERT_SPECIALS,
            pretraining=Pretraining("mlm+nsp", "pairs", "static"),
            # WordPiece by frequency, Hugging Face's rule: the likelihood criterion (the default of
            # `tokenizer train`) needs more tokens per word at the small vocabularies jobs train
            tokenizer_options=(("criterion", "frequency"),),
        ),
        Family(
            "roberta",
            RobertaConfig,
            "Roberta",
            _TASK_HEADS,
            hf_names.ROBERTA,
            tokenizer="roberta",
            tokenizer_algorithm="byte-level BPE",
            specials=Specials(cls="<s>", sep="</s>", mask="<mask>", pad="<pad>"),
            pretraining=Pretraining("mlm", "full-sentences", "dynamic"),
        ),
        Family(
            "albert",
            AlbertConfig,
            "Albert",
            ("ForPreTraining",) + _TASK_HEADS,
            hf_names.ALBERT,
            tokenizer="albert",
            tokenizer_algorithm="Unigram",
            specials=Specials(cls="[CLS]", sep="[SEP]", mask="[MASK]", pad="<pad>"),
            pretraining=Pretraining("mlm+sop", "pairs", "static", ngram=3),
        ),
        Family(
            "distilbert",
            DistilBertConfig,
            "DistilBert",
            _TASK_HEADS,
            hf_names.DISTILBERT,
            tokenizer="bert",
            tokenizer_algorithm="WordPiece",
            specials=_BERT_SPECIALS,
        ),
        Family(
            "xlnet",
            XLNetConfig,
            "XLNet",
            (
                "LMHeadModel",
                "ForSequenceClassification",
                "ForTokenClassification",
                "ForQuestionAnsweringSimple",
                "ForQuestionAnswering",
                "ForMultipleChoice",
            ),
            hf_names.XLNET,
            tokenizer="xlnet",
            tokenizer_algorithm="Unigram",
            specials=Specials(cls="<cls>", sep="<sep>", mask="<mask>", pad="<pad>", eod="</s>"),
            pretraining=Pretraining("plm", "streams", "permutation"),
            task_heads=(("ForQuestionAnswering", "ForQuestionAnsweringSimple"),),
            summary_head=True,
            prompts=None,  # a permutation LM, not a masked one: no prompt head yet
        ),
        # the discriminator is the model kept; pretraining adds a generator (models/electra.py ElectraPair)
        Family(
            "electra",
            ElectraConfig,
            "Electra",
            ("ForPreTraining",) + _TASK_HEADS,
            hf_names.ELECTRA,
            tokenizer="bert",
            tokenizer_algorithm="WordPiece",
            specials=_BERT_SPECIALS,
            pretraining=Pretraining("rtd", "full-sentences", "dynamic"),
            tokenizer_options=(("criterion", "frequency"),),
            prompts="rtd",
        ),
    )
}
PRETRAINABLE = tuple(name for name, f in FAMILIES.items() if f.pretraining is not None)


def get_family(name: str) -> Family:
    """The record of a family by model_type, or a ValueError listing the known ones."""
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def family_of(config: EncoderConfig) -> Family:
    return get_family(config.model_type)


def config_from_dict(d: dict[str, Any], source: str = "config") -> EncoderConfig:
    """The family config a config.json dict describes (its model_type decides which)."""
    model_type = d.get("model_type")
    if model_type not in FAMILIES:
        raise ValueError(f"{source}: unknown model_type {model_type!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[model_type].config.from_dict(d, source)


def resolve_preset(spec: str) -> tuple[Family, str]:
    """'bert-mini' → (the bert family, 'mini'), or a ValueError listing the presets."""
    name, _, size = spec.partition("-")
    if name in FAMILIES and size not in FAMILIES[name].config.presets:
        raise ValueError(f"unknown {name} preset {size!r}; {name} presets: {', '.join(FAMILIES[name].config.presets)}")
    if name not in FAMILIES:
        raise ValueError(f"{spec!r} is not a preset (FAMILY-SIZE, e.g. bert-mini); families: {', '.join(FAMILIES)}")
    return FAMILIES[name], size
