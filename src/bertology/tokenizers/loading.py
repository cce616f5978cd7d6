"""Which tokenizer file is this? A path -> the TokenizerSpec its reader returns.

    tokenizer.json, or a directory holding one        tokenizer_json.spec_from_json
    vocab.txt (BERT)                                  vocab_files.vocab_txt_spec
    vocab.json + merges.txt (GPT-2 / RoBERTa)         vocab_files.vocab_merges_spec
    a SentencePiece .model                            sentencepiece_model.spm_spec

`Tokenizer.load(path)` is `Tokenizer.from_spec(read_spec(path))`. Errors name the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .sentencepiece_model import spm_spec
from .spec import TokenizerSpec
from .tokenizer_json import spec_from_json
from .vocab_files import vocab_merges_spec, vocab_txt_spec


def read_spec(path: str | os.PathLike, **kw) -> TokenizerSpec:
    """The spec of the tokenizer file at path (or in the directory path). Keyword options go to
    the vocab.txt / vocab.json readers (e.g. lowercase=False) and the .model reader."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if path.is_dir():
        if (path / "tokenizer.json").is_file():
            return read_json_file(path / "tokenizer.json")
        if (path / "vocab.txt").is_file():
            return vocab_txt_spec(path / "vocab.txt", **kw)
        if (path / "vocab.json").is_file() and (path / "merges.txt").is_file():
            return vocab_merges_spec(path / "vocab.json", path / "merges.txt", **kw)
        models = sorted(path.glob("*.model"))
        if models:
            return spm_spec(models[0], **kw)
        raise FileNotFoundError(
            f"{path}: no tokenizer.json, vocab.txt, vocab.json + merges.txt or SentencePiece .model in this directory"
        )
    if path.name in ("vocab.json", "merges.txt"):
        vocab, merges = path.with_name("vocab.json"), path.with_name("merges.txt")
        for p in (vocab, merges):
            if not p.is_file():
                raise FileNotFoundError(f"{p}: needed next to {path} for a BPE tokenizer")
        return vocab_merges_spec(vocab, merges, **kw)
    if path.suffix == ".json":
        return read_json_file(path)
    if path.suffix == ".txt":
        return vocab_txt_spec(path, **kw)
    if path.suffix == ".model":
        return spm_spec(path, **kw)
    raise ValueError(
        f"{path}: unknown tokenizer file type (expected tokenizer.json, vocab.txt, "
        "vocab.json + merges.txt or a SentencePiece .model)"
    )


def read_json_file(path: Path) -> TokenizerSpec:
    """A tokenizer.json file's spec; any fault comes back as a ValueError naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e})") from None
    try:
        return spec_from_json(data)
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: {e}") from None
