"""Prompt-based fine-tuning (PET, Schick & Schütze 2021; LM-BFF, Gao et al. 2021): the input is
written into a template with one blank, and the classifier is the pretrained head's opinion of
each label's word in that blank, fine-tuned end to end. No new weights start from random: with
few labels, the head that pretraining trained best is the one that classifies.

    prompt = Prompt.build("{text} It is about [MASK].", {"games": ["games"], "mail": ["mail"]}, tokenizer, "mlm")
    features = prompt.featurize(examples, tokenizer, max_length=64, labels=label_ids)

How the blank is read depends on the family's pretraining (models/family.py `prompts`):
  mlm  the masked LM at the mask: a class's score is its label word's mean piece logit there
       (a word of several pieces: the mean of their logits at the one mask);
  rtd  ELECTRA's discriminator (Xia et al. 2022): one copy of the prompt per class with that class's
       (first) word in the blank; the word judged least "replaced" wins (inputs (B, C, T), as multiple
       choice).

The template names the text as {text} (and a pair as {pair}) and the blank as [MASK], whatever the
model's own mask token is. The verbalizer maps each label to its words; by default a label is its
own name. A label word's pieces are those it gets in the blank's place, so a byte-level BPE word
takes its leading-space form (RoBERTa's " games", not "games").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from string import Formatter

import torch

from ..tokenizers.encoding import model_tensors
from ..tokenizers.truncation import pad_encodings, resolve_padding
from .base import Example, Features, PaddedFeatures

BLANK = "[MASK]"  # where the template's blank goes, written the same for every family
FIELDS = ("text", "pair")
DEFAULT_TEMPLATE = "{text} It is about [MASK]."


def template_fields(template: str) -> list[str]:
    """The {fields} a template names, in order; an unknown field or a format spec is an error.

    >>> template_fields("{text} ? [MASK] , {pair}")
    ['text', 'pair']
    """
    fields = []
    for _, name, spec, conversion in Formatter().parse(template):
        if name is None:
            continue
        if name not in FIELDS or spec or conversion:
            raise ValueError(f"template {template!r}: unknown field {{{name}}}; a template takes {{text}} and {{pair}}")
        fields.append(name)
    return fields


def check_template(template: str, pairs: bool) -> None:
    """One {text}, one {pair} when the examples have pairs (none otherwise), exactly one [MASK]."""
    fields = template_fields(template)
    if fields.count("text") != 1:
        raise ValueError(f"template {template!r}: name the input once as {{text}}")
    if fields.count("pair") != (1 if pairs else 0):
        need = "name the pair once as {pair}" if pairs else "{pair} given, but the examples have no pair"
        raise ValueError(f"template {template!r}: {need}")
    if template.count(BLANK) != 1:
        raise ValueError(f"template {template!r}: write the blank the label word fills exactly once, as {BLANK}")


def fill(template: str, fields: dict[str, str], blank: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """The template with its fields and blank written in, and each one's character span.

    >>> fill("{text} is [MASK].", {"text": "tetris"}, "<mask>")
    ('tetris is <mask>.', {'text': (0, 6), 'blank': (10, 16)})
    """
    out, spans = [], {}
    for literal, name, _, _ in Formatter().parse(template):
        for i, part in enumerate(literal.split(BLANK)):
            if i:
                start = sum(map(len, out))
                out.append(blank)
                spans["blank"] = (start, start + len(blank))
            out.append(part)
        if name is not None:
            start = sum(map(len, out))
            out.append(fields[name])
            spans[name] = (start, start + len(fields[name]))
    return "".join(out), spans


def read_verbalizer(path: str | Path) -> dict[str, list[str]]:
    """Label words from a file: a JSON object {label: word or [words]}, or lines `label<TAB>word[, word …]`."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a JSON verbalizer is an object {{label: word or [words]}}")
        out = {str(k): [v] if isinstance(v, str) else v for k, v in data.items()}
    else:
        out = {}
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            label, tab, words = line.partition("\t")
            if not tab:
                raise ValueError(f"{path}:{n}: expected `label<TAB>word[, word …]`, got {line!r}")
            if label in out:
                raise ValueError(f"{path}:{n}: label {label!r} listed twice")
            out[label] = [w.strip() for w in words.split(",")]
    for label, words in out.items():
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise ValueError(f"{path}: label {label!r} needs one or more non-empty words, got {words!r}")
    return out


def _covered(offsets: list[tuple[int, int]], span: tuple[int, int], special: list[int]) -> list[int]:
    """Positions of the tokens that overlap a character span (special tokens excluded). Overlap, not
    containment: a Metaspace piece's offsets take in the space before its word ("▁games" covers " games").

    >>> _covered([(0, 3), (3, 9), (9, 10)], (4, 9), [0, 0, 0])
    [1]
    """
    a, b = span
    return [i for i, (s, e) in enumerate(offsets) if not special[i] and e > s and s < b and e > a]


@dataclass(frozen=True)
class Prompt:
    template: str
    label_words: dict[str, list[str]]  # label → its words, in the model's label order
    style: str  # "mlm" or "rtd" (models/family.py `prompts`)
    mask_token: str
    mask_token_id: int
    label_word_ids: list[list[list[int]]]  # per label, per word: its pieces in the blank

    @classmethod
    def build(cls, template: str, label_words: dict[str, list[str]], tokenizer, style: str) -> "Prompt":
        """Check the template, find the model's mask token and each label word's pieces in the blank."""
        if style not in ("mlm", "rtd"):
            raise ValueError(f"prompt style {style!r}: mlm or rtd")
        template_fields(template)
        if template.count(BLANK) != 1:
            raise ValueError(f"template {template!r}: write the blank exactly once, as {BLANK}")
        mask = next((t for t in ("[MASK]", "<mask>") if tokenizer.token_to_id(t) is not None), None)
        if mask is None:
            raise ValueError("the tokenizer has no mask token ([MASK] or <mask>): a prompt needs one")
        fields = {"text": "x", "pair": "x"}
        ids = []
        for label, words in label_words.items():
            pieces = []
            for word in words:
                text, spans = fill(template, fields, word)
                enc = tokenizer.encode(text)
                found = [enc.ids[i] for i in _covered(enc.offsets, spans["blank"], enc.special_tokens_mask)]
                if not found:
                    raise ValueError(f"label {label!r}: the word {word!r} gives no tokens in the template")
                pieces.append(found)
            ids.append(pieces)
        return cls(template, dict(label_words), style, mask, tokenizer.token_to_id(mask), ids)

    def to_dict(self) -> dict:
        return {
            "template": self.template,
            "label_words": self.label_words,
            "style": self.style,
            "mask_token": self.mask_token,
            "mask_token_id": self.mask_token_id,
            "label_word_ids": self.label_word_ids,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Prompt":
        return cls(**d)

    def _fit(self, example: Example, tokenizer, max_length: int, blank: str):
        """The filled template as an Encoding of at most max_length tokens (the input shortened, never
        the template), with its blank's character span, and whether the input was cut."""
        fields = {"text": example.text, **({"pair": example.pair} if example.pair is not None else {})}
        cut = False
        while True:
            text, spans = fill(self.template, fields, blank)
            enc = tokenizer.encode(text)
            excess = len(enc.ids) - max_length
            if excess <= 0:
                return enc, spans["blank"], cut
            longest = max(fields, key=lambda f: len(_covered(enc.offsets, spans[f], enc.special_tokens_mask)))
            inside = _covered(enc.offsets, spans[longest], enc.special_tokens_mask)
            if len(inside) <= 1:
                raise ValueError(
                    f"{example.where}: the template {self.template!r} alone is longer than --max-length {max_length}"
                )
            keep = max(1, len(inside) - excess)  # tokens of the field kept; re-encoded until the whole fits
            fields[longest] = fields[longest][: enc.offsets[inside[keep]][0] - spans[longest][0]].rstrip()
            cut = True

    def featurize(self, examples: list[Example], tokenizer, max_length: int, labels: torch.Tensor | None) -> Features:
        """mlm: rows (N, T) with the mask in the blank; rtd: (N, C, T), class c's word in the blank of
        copy c, and `candidate_mask` marking its pieces. Padded to the longest row."""
        check_template(self.template, pairs=any(e.pair is not None for e in examples))
        encodings, marks, truncated = [], [], 0
        for e in examples:
            if self.style == "mlm":
                enc, _, cut = self._fit(e, tokenizer, max_length, self.mask_token)
                encodings.append(enc)
            else:
                for words in self.label_words.values():  # a label's first word: one copy per class
                    enc, span, cut = self._fit(e, tokenizer, max_length, words[0])
                    encodings.append(enc)
                    marks.append(_covered(enc.offsets, span, enc.special_tokens_mask))
            truncated += cut
        pad_encodings(encodings, **resolve_padding(tokenizer.padding, True, None, None, tokenizer.token_to_id))
        width = len(encodings[0].ids)
        tensors = model_tensors(encodings)
        if self.style == "rtd":
            candidate = torch.zeros(len(encodings), width, dtype=torch.long)
            for row, positions in enumerate(marks):
                candidate[row, positions] = 1
            tensors["candidate_mask"] = candidate
            C = len(self.label_words)
            tensors = {k: v.view(len(examples), C, width) for k, v in tensors.items()}
        if labels is not None:
            tensors["labels"] = labels
        return PaddedFeatures(tensors, [[i] for i in range(len(examples))], truncated=truncated)
