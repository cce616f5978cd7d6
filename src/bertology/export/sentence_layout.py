"""A model directory that `sentence_transformers.SentenceTransformer(dir)` opens, with the embeddings
bertology's `embed` / `serve` give: the encoder in Hugging Face layout, its tokenizer, and the
modules sentence-transformers chains after it (pooling, then optionally L2 normalisation).

    >>> save_sentence_transformers(model, tokenizer, "minilm-st", pooling="mean", normalize=True)  # doctest: +SKIP
    >>> SentenceTransformer("minilm-st").encode(["a puzzle game"])                                  # doctest: +SKIP

The layout is sentence-transformers' own (modules.json, sentence_bert_config.json, 1_Pooling/,
2_Normalize/), as the all-MiniLM-L6-v2 checkpoint has it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..io import atomic_dir, atomic_write_text
from ..models.checkpoint import save
from ..models.family import family_of

POOLINGS = ("mean", "cls")


def _write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(value, indent=2) + "\n")


def _special_tokens(model, tokenizer) -> dict[str, str]:
    """The tokenizer's special tokens by role (transformers' tokenizer_config.json keys)."""
    specials, unk_id = family_of(model.config).specials, getattr(tokenizer.model, "unk_id", None)
    unk = getattr(tokenizer.model, "unk_token", None) or (tokenizer.id_to_token(unk_id) if unk_id is not None else None)
    roles = {
        "cls_token": specials.cls,
        "sep_token": specials.sep,
        "mask_token": specials.mask,
        "pad_token": specials.pad,
        "unk_token": unk,
    }
    return {
        role: token for role, token in roles.items() if token is not None and tokenizer.token_to_id(token) is not None
    }


def save_sentence_transformers(
    model,
    tokenizer,
    path: str | os.PathLike,
    pooling: str = "mean",
    normalize: bool = False,
    max_seq_length: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Write `model`'s encoder (any head's backbone), `tokenizer` and the pooling modules to `path`.

    pooling: "mean" over real tokens or the first token ("cls"); normalize: unit-length vectors;
    max_seq_length: where sentence-transformers cuts a text (default: the model's positions).
    The directory appears whole or not at all; an existing `path` is an error unless `overwrite`."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling {pooling!r}: choose one of {', '.join(POOLINGS)}")
    backbone = getattr(model, "backbone", model)
    positions = getattr(backbone.config, "max_position_embeddings", None)
    if max_seq_length is None:
        max_seq_length = positions or 512
    if max_seq_length < 1 or (positions and max_seq_length > positions):
        raise ValueError(f"max_seq_length {max_seq_length}: must be in [1, {positions}] (the model's positions)")
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path}: already exists (pass overwrite=True / --overwrite to replace it)")
    with atomic_dir(path, exists="replace" if overwrite else "error") as tmp:
        save(backbone, tmp)
        tokenizer.save(tmp / "tokenizer.json")
        specials = _special_tokens(backbone, tokenizer)
        # the tokenizer.json carries the whole pipeline; the generic fast class reads it as it is
        _write_json(
            tmp / "tokenizer_config.json",
            {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_seq_length, **specials},
        )
        _write_json(tmp / "special_tokens_map.json", specials)
        _write_json(tmp / "sentence_bert_config.json", {"max_seq_length": max_seq_length, "do_lower_case": False})
        _write_json(
            tmp / "1_Pooling" / "config.json",
            {
                "word_embedding_dimension": backbone.config.hidden_size,
                "pooling_mode_cls_token": pooling == "cls",
                "pooling_mode_mean_tokens": pooling == "mean",
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
        )
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        if normalize:
            (tmp / "2_Normalize").mkdir()
            modules.append(
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            )
        _write_json(tmp / "modules.json", modules)
    return path
