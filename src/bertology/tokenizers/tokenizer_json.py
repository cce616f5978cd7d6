"""Hugging Face's tokenizer.json: a TokenizerSpec to and from its JSON object.

    {"version": "1.0", "truncation": ..., "padding": ..., "added_tokens": [...],
     "normalizer": ..., "pre_tokenizer": ..., "post_processor": ..., "decoder": ..., "model": ...}

Each component object names its class by "type"; the stage modules' `*_from_json` pick it.
"""

from __future__ import annotations

from .added_tokens import AddedToken
from .base import Model, component_from_json
from .bpe import BPE
from .decoders import decoder_from_json
from .normalizers import normalizer_from_json
from .post_processors import post_processor_from_json
from .pre_tokenizers import pre_tokenizer_from_json
from .spec import TokenizerSpec
from .truncation import TRUNCATION_STRATEGIES
from .unigram import Unigram
from .wordpiece import WordPiece

MODELS = {"WordPiece": WordPiece, "BPE": BPE, "Unigram": Unigram}
_STRATEGY_OF_JSON = {v: k for k, v in TRUNCATION_STRATEGIES.items()}


def model_from_json(data: dict) -> Model:
    if not isinstance(data, dict):
        raise ValueError(f"model: expected an object, got {type(data).__name__}")
    kind = data.get("type")
    if kind is None:  # files from before `type` was written: infer it like `tokenizers` does
        kind = (
            "BPE"
            if "merges" in data
            else "Unigram"
            if isinstance(data.get("vocab"), list)
            else "WordPiece"
            if "continuing_subword_prefix" in data or "max_input_chars_per_word" in data
            else None
        )
    return component_from_json("model", MODELS, data, kind)


def spec_from_json(data: dict) -> TokenizerSpec:
    """Read a tokenizer.json object; a ValueError names the part at fault."""
    if not isinstance(data, dict):
        raise ValueError(f"a tokenizer.json holds an object, got {type(data).__name__}")
    if "model" not in data:
        raise ValueError("missing key 'model'")
    spec = TokenizerSpec(
        model_from_json(data["model"]),
        normalizer_from_json(data.get("normalizer")),
        pre_tokenizer_from_json(data.get("pre_tokenizer")),
        post_processor_from_json(data.get("post_processor")),
        decoder_from_json(data.get("decoder")),
        added_ids=[],
    )
    for k, t in enumerate(data.get("added_tokens") or []):
        try:
            spec.added_tokens.append(
                AddedToken(
                    t["content"],
                    t.get("special", False),
                    t.get("single_word", False),
                    t.get("lstrip", False),
                    t.get("rstrip", False),
                    t.get("normalized"),
                )
            )
            spec.added_ids.append(int(t["id"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"added_tokens[{k}]: bad entry {t!r} ({e})") from None
    tr = data.get("truncation")
    if tr:
        strategy = _STRATEGY_OF_JSON.get(tr.get("strategy", "LongestFirst"))
        if strategy is None:
            raise ValueError(f"truncation.strategy: unknown value {tr.get('strategy')!r}")
        spec.truncation = {
            "max_length": tr["max_length"],
            "stride": tr.get("stride", 0),
            "strategy": strategy,
            "direction": tr.get("direction", "Right").lower(),
        }
    pd = data.get("padding")
    if pd:
        s = pd.get("strategy", "BatchLongest")
        length = s.get("Fixed") if isinstance(s, dict) else None
        if not (s == "BatchLongest" or length is not None):
            raise ValueError(f"padding.strategy: unknown value {s!r}")
        spec.padding = {
            "direction": pd.get("direction", "Right").lower(),
            "pad_id": pd.get("pad_id", 0),
            "pad_type_id": pd.get("pad_type_id", 0),
            "pad_token": pd.get("pad_token", "[PAD]"),
            "length": length,
            "pad_to_multiple_of": pd.get("pad_to_multiple_of"),
        }
    return spec


def spec_to_json(spec: TokenizerSpec) -> dict:
    """The tokenizer.json object of spec (added tokens in the order given, with spec.added_ids)."""
    trunc = pad = None
    if spec.truncation is not None:
        t = spec.truncation
        trunc = {
            "direction": t["direction"].capitalize(),
            "max_length": t["max_length"],
            "strategy": TRUNCATION_STRATEGIES[t["strategy"]],
            "stride": t["stride"],
        }
    if spec.padding is not None:
        p = spec.padding
        pad = {
            "strategy": "BatchLongest" if p["length"] is None else {"Fixed": p["length"]},
            "direction": p["direction"].capitalize(),
            "pad_to_multiple_of": p["pad_to_multiple_of"],
            "pad_id": p["pad_id"],
            "pad_type_id": p["pad_type_id"],
            "pad_token": p["pad_token"],
        }
    added = [
        {
            "id": i,
            "content": t.content,
            "single_word": t.single_word,
            "lstrip": t.lstrip,
            "rstrip": t.rstrip,
            "normalized": t.normalized,
            "special": t.special,
        }
        for t, i in zip(spec.added_tokens, spec.added_ids or [])
    ]

    def part(x):
        return x.to_json() if x is not None else None

    return {
        "version": "1.0",
        "truncation": trunc,
        "padding": pad,
        "added_tokens": added,
        "normalizer": part(spec.normalizer),
        "pre_tokenizer": part(spec.pre_tokenizer),
        "post_processor": part(spec.post_processor),
        "decoder": part(spec.decoder),
        "model": spec.model.to_json(),
    }
