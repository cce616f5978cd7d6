"""Tokenizers described by plain vocabulary files: BERT's vocab.txt, GPT-2 / RoBERTa's vocab.json + merges.txt.

Each reader returns the TokenizerSpec of the pipeline those checkpoints use.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import decoders, normalizers, post_processors, pre_tokenizers
from .added_tokens import AddedToken
from .base import Model
from .bpe import BPE
from .spec import TokenizerSpec
from .wordpiece import WordPiece


def _specials(model: Model, names, **flags) -> list[AddedToken]:
    """The special tokens among names that the vocabulary holds (flags: per-token AddedToken options)."""
    return [AddedToken(n, special=True, **flags.get(n, {})) for n in names if model.token_to_id(n) is not None]


def vocab_txt_spec(
    path,
    lowercase: bool | None = None,
    strip_accents: bool | None = None,
    handle_chinese_chars: bool = True,
    unk_token: str = "[UNK]",
) -> TokenizerSpec:
    """The BERT pipeline over a vocab.txt (uncased unless lowercase=False, or a sibling
    tokenizer_config.json says do_lower_case false)."""
    path = Path(path)
    if lowercase is None:
        cfg = path.with_name("tokenizer_config.json")
        lowercase = True
        if cfg.is_file():
            try:
                lowercase = bool(json.loads(cfg.read_text(encoding="utf-8")).get("do_lower_case", True))
            except json.JSONDecodeError as e:
                raise ValueError(f"{cfg}: not valid JSON ({e})") from None
    model = WordPiece.from_vocab_txt(path, unk_token=unk_token)
    cls_id, sep_id = model.token_to_id("[CLS]"), model.token_to_id("[SEP]")
    template = post_processors.bert_processing(cls_id, sep_id) if cls_id is not None and sep_id is not None else None
    return TokenizerSpec(
        model,
        normalizers.BertNormalizer(True, handle_chinese_chars, strip_accents, lowercase),
        pre_tokenizers.BertPreTokenizer(),
        template,
        decoders.WordPiece(),
        _specials(model, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]),
    )


def vocab_merges_spec(
    vocab_json, merges_txt, add_prefix_space: bool = False, trim_offsets: bool = True
) -> TokenizerSpec:
    """The GPT-2 / RoBERTa byte-level BPE pipeline over vocab.json + merges.txt."""
    model = BPE.from_files(vocab_json, merges_txt)
    spec = TokenizerSpec(
        model, None, pre_tokenizers.ByteLevel(add_prefix_space, trim_offsets), None, decoders.ByteLevel()
    )
    bos, eos = model.token_to_id("<s>"), model.token_to_id("</s>")
    if bos is not None and eos is not None:  # RoBERTa
        spec.post_processor = post_processors.RobertaProcessing(
            ("</s>", eos), ("<s>", bos), trim_offsets, add_prefix_space
        )
        spec.added_tokens = _specials(
            model, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], **{"<mask>": {"lstrip": True}}
        )
    else:  # GPT-2
        spec.post_processor = post_processors.ByteLevel(add_prefix_space, trim_offsets)
        spec.added_tokens = _specials(model, ["<|endoftext|>"])
    return spec
