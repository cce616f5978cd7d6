"""The pretraining recipe: what a job pretrains on, resolved ONCE from the family record and the
user's options, frozen and validated here. Every job reads it and dispatches on `objective`.

    >>> r = Recipe.resolve("albert", max_seq_length=64); (r.objective, r.packing, r.masking, r.ngram)
    ('mlm+sop', 'pairs', 'static', 3)
    >>> Recipe.resolve("roberta", max_seq_length=64, objective="mlm+nsp")
    Traceback (most recent call last):
    ...
    ValueError: objective 'mlm+nsp' does not go with packing 'full-sentences': segment pairs are for mlm+nsp / mlm+sop, full-sentences / doc-sentences for mlm / rtd / simcse / tsdae

A new objective is one value of OBJECTIVES (with its HEADS entry), one file under train/ with its
objective class, and one line in train/registry.py (a masked one: a masker choice, data/masker.py).

    >>> r = Recipe.resolve("bert", max_seq_length=64, objective="simcse"); (r.packing, r.pair_task)
    ('doc-sentences', None)
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, fields

from ..models.family import PRETRAINABLE, get_family
from .permutation import PermutationSettings

RTD = "rtd"  # ELECTRA's replaced-token detection: a generator's MLM and a discriminator over every token
SIMCSE = "simcse"  # unsupervised SimCSE: each text twice through dropout, in-batch negatives (train/simcse.py)
TSDAE = "tsdae"  # a denoising auto-encoder through the sentence vector (train/tsdae.py)
SENTENCE_OBJECTIVES = (SIMCSE, TSDAE)  # whole texts, no masks: the encoder alone is trained and saved
OBJECTIVES = ("mlm+nsp", "mlm+sop", "mlm", RTD, *SENTENCE_OBJECTIVES)  # --objective
PACKED = ("mlm", RTD, *SENTENCE_OBJECTIVES)  # the objectives over single sequences, not segment pairs
PLM = "plm"  # XLNet's permutation LM over streams of text
PACKINGS = ("pairs", "full-sentences", "doc-sentences")
MASKINGS = ("static", "dynamic")  # --masking; "smoothed" is distillation's (DistilBERT)
_MASKINGS = (*MASKINGS, "smoothed")
# the model head each objective trains, and the batch key of its sentence-pair labels
HEADS = {
    "mlm+nsp": "ForPreTraining",
    "mlm+sop": "ForPreTraining",
    "mlm": "ForMaskedLM",
    PLM: "LMHeadModel",
    RTD: "ForPreTraining",
    # the sentence objectives train the backbone alone: a --init checkpoint is checked for a whole
    # backbone as the MLM head model checks it (every family but XLNet has one)
    SIMCSE: "ForMaskedLM",
    TSDAE: "ForMaskedLM",
}  # rtd: the discriminator, trained beside its generator (models.electra.ElectraPair)
PAIR_LABELS = {"mlm+nsp": "next_sentence_label", "mlm+sop": "sentence_order_label"}


@dataclass(frozen=True)
class Recipe:
    family: str
    objective: str  # mlm+nsp | mlm+sop | mlm | rtd | simcse | tsdae | plm
    max_seq_length: int = 128
    packing: str = "pairs"  # pairs | full-sentences | doc-sentences (plm: streams)
    masking: str = "static"  # static (a mask per instance, fixed) | dynamic (per batch) | smoothed (plm: none)
    whole_word: bool = False
    ngram: int = 1  # mask spans of up to n words (or tokens), p(n) ∝ 1/n
    mlm_probability: float = 0.15
    max_predictions: int | None = 20
    dupe_factor: int = 1  # copies of the text, each with its own instances and static masks
    short_seq_prob: float = 0.1
    negative_window: int = 1000  # documents NSP draws its random next sentences from
    permutation: PermutationSettings | None = None  # plm only

    def __post_init__(self):
        get_family(self.family)
        if self.objective == PLM:
            if self.permutation is None:
                raise ValueError("the permutation LM needs its settings (permutation=PermutationSettings(...))")
            return
        for name, value, allowed in (
            ("objective", self.objective, OBJECTIVES),
            ("packing", self.packing, PACKINGS),
            ("masking", self.masking, _MASKINGS),
        ):
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")
        if (self.objective in PACKED) != (self.packing != "pairs"):
            raise ValueError(
                f"objective {self.objective!r} does not go with packing {self.packing!r}: segment pairs "
                f"are for mlm+nsp / mlm+sop, full-sentences / doc-sentences for {' / '.join(PACKED)}"
            )
        checks = (
            ("max_seq_length", self.max_seq_length >= 5, "be >= 5"),
            ("dupe_factor", self.dupe_factor >= 1, "be >= 1"),
            ("short_seq_prob", 0 <= self.short_seq_prob <= 1, "be in [0, 1]"),
            ("ngram", self.ngram >= 1, "be >= 1"),
            ("mlm_probability", 0 <= self.mlm_probability <= 1, "be in [0, 1]"),
            ("max_predictions", self.max_predictions is None or self.max_predictions >= 1, "be >= 1"),
        )
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name} must {rule}, got {getattr(self, name)}")
        T, p, cap = self.max_seq_length, self.mlm_probability, self.max_predictions
        if cap is not None and cap < round(p * (T - (3 if self.pair_task else 2))):
            warnings.warn(
                f"max_predictions_per_seq={cap} caps masking below mlm_probability={p} of max_seq_length={T} "
                "(Google used 20 for 128, 80 for 512)"
            )

    @property
    def head(self) -> str:
        """The model head that learns this objective (e.g. ForPreTraining for mlm+nsp)."""
        return HEADS[self.objective]

    @property
    def pair_task(self) -> str | None:
        """The sentence-pair task of the instances: "nsp", "sop", or None (packed sequences)."""
        return {"mlm+nsp": "nsp", "mlm+sop": "sop"}.get(self.objective)

    @property
    def pair_label(self) -> str | None:
        """The batch key of the sentence-pair labels (NSP / SOP), None without a pair objective."""
        return PAIR_LABELS.get(self.objective)

    def check_model(self) -> None:
        """The family's model can learn this objective: a pair objective needs the family's own pair head."""
        if self.objective in SENTENCE_OBJECTIVES:  # the backbone alone: every family here has one
            return
        paper = get_family(self.family).pretraining
        own = sorted({"mlm", paper.objective}) if paper else ["mlm"]
        if self.objective not in own:
            raise ValueError(f"{self.family} has no {self.objective} head; --objective {' or '.join(own)}")

    def instance_key(self) -> dict:
        """What the unmasked instances depend on (the masks are drawn later, from the rest)."""
        keep = (
            "family",
            "objective",
            "max_seq_length",
            "packing",
            "dupe_factor",
            "short_seq_prob",
            "negative_window",
            "whole_word",
        )
        return {k: getattr(self, k) for k in keep}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Recipe":
        d = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        if d.get("permutation"):
            d["permutation"] = PermutationSettings(**d["permutation"])
        return cls(**d)

    @classmethod
    def resolve(
        cls,
        family: str,
        *,
        objective: str | None = None,
        packing: str | None = None,
        masking: str | None = None,
        ngram: int | None = None,
        **rest,
    ) -> "Recipe":
        """The family's paper recipe with the given options in place of its defaults (None: the
        family's). Defaults: bert = mlm+nsp, pairs, static; roberta = mlm, full-sentences, dynamic;
        albert = mlm+sop, pairs, static, n-gram (n <= 3); a pair family asked for plain mlm packs
        full sentences; a sentence objective reads a document's text alone (doc-sentences)."""
        paper = get_family(family).pretraining
        if paper is None and None in (objective, packing, masking):
            raise ValueError(
                f"{family} has no pretraining recipe of its own: give objective, packing and masking, or "
                f"choose one of {', '.join(PRETRAINABLE)}"
            )
        if paper is not None and paper.objective == PLM:
            raise ValueError(f"{family} pretrains by permutation LM: Recipe.permutation_lm")
        d_obj, d_pack, d_mask, d_ngram = (
            (paper.objective, paper.packing, paper.masking, paper.ngram) if paper else (objective, packing, masking, 1)
        )
        objective = objective or d_obj
        if objective in SENTENCE_OBJECTIVES:
            packing = packing or "doc-sentences"
        packing = packing or (
            d_pack if objective not in PACKED else ("full-sentences" if d_pack == "pairs" else d_pack)
        )
        return cls(
            family,
            objective,
            packing=packing,
            masking=masking or d_mask,
            ngram=d_ngram if ngram is None else ngram,
            **rest,
        )

    @classmethod
    def permutation_lm(cls, family: str, settings: PermutationSettings) -> "Recipe":
        return cls(
            family, PLM, max_seq_length=settings.seq_len, packing="streams", masking="permutation", permutation=settings
        )

    @classmethod
    def sentences(cls, o) -> "Recipe":
        """The recipe of a sentence objective's options: texts read whole, no masks, so the masking
        options are refused by name and each text is read once per pass (dupe_factor 1)."""
        paper = get_family(o.family).pretraining
        if paper is not None and paper.objective == PLM:
            raise ValueError(
                f"--objective {o.objective}: not for {o.family}, whose sentence vector is its sequence summary "
                "and which pretrains by permutation LM; bert, roberta, albert and electra take it"
            )
        given = [f"--{n.replace('_', '-')}" for n in ("masking", "ngram", "max_predictions") if getattr(o, n)]
        if o.whole_word:
            given.append("--whole-word")
        if given:
            raise ValueError(f"{', '.join(given)}: masking options; --objective {o.objective} reads texts unmasked")
        return cls.resolve(
            o.family, objective=o.objective, packing=o.packing, max_seq_length=o.max_length, max_predictions=None
        )

    @classmethod
    def from_options(cls, o) -> "Recipe":
        """The recipe of `bertology pretrain` options (train.pretrain.PretrainOptions); each error
        names the option at fault."""
        paper = get_family(o.family).pretraining
        if o.objective in SENTENCE_OBJECTIVES:
            return cls.sentences(o)
        if paper is not None and paper.objective == PLM:
            for name in ("objective", "packing", "masking", "ngram", "max_predictions"):
                if getattr(o, name) is not None:
                    raise ValueError(
                        f"--{name.replace('_', '-')} is an MLM option; XLNet pretrains by permutation LM "
                        "(--reuse-len, --num-predict, --perm-size, --mem-len, --bi-data)"
                    )
            if o.whole_word:
                raise ValueError("--whole-word is an MLM option; XLNet's targets are word-aligned spans already")
            return cls.permutation_lm(
                o.family,
                PermutationSettings.scaled(
                    o.max_length,
                    reuse_len=o.reuse_len,
                    num_predict=o.num_predict,
                    perm_size=o.perm_size,
                    bi_data=o.bi_data,
                ),
            )
        return cls.resolve(
            o.family,
            objective=o.objective,
            packing=o.packing,
            masking=o.masking,
            ngram=o.ngram,
            max_seq_length=o.max_length,
            whole_word=bool(o.whole_word),
            mlm_probability=o.mlm_probability,
            max_predictions=o.max_predictions or max(1, round(o.max_length * o.mlm_probability)),
            dupe_factor=o.dupe_factor,
        )
