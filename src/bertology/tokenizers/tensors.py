"""A batch of Encodings as torch tensors (encode_batch's return_tensors="pt")."""

from __future__ import annotations

from .encoding import Encoding, model_tensors
from .truncation import pad_encodings


def batch_tensors(encodings: list[Encoding], return_overflowing: bool, pad: dict | None) -> dict:
    """(rows, T) tensors: model_tensors' three plus special_tokens_mask, offset_mapping (rows, T, 2),
    and either overflow_to_sample_mapping (return_overflowing: the truncated windows become rows
    of their own) or num_overflowing (how many windows each row lost to truncation)."""
    import torch  # only when tensors are asked for: the tokenizer itself needs no torch

    rows, sample = [], []
    for i, e in enumerate(encodings):
        rows.append(e)
        sample.append(i)
        if return_overflowing:
            rows.extend(e.overflowing)
            sample.extend([i] * len(e.overflowing))
    if return_overflowing and pad is not None:
        pad_encodings(rows, **{**pad, "length": pad.get("length") or max(map(len, rows), default=0)})
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:
        raise ValueError(
            f"return_tensors='pt' needs equal lengths, got lengths {sorted(lengths)}; "
            "pass padding=True (or 'max_length')"
        )
    out = {
        **model_tensors(rows),
        "special_tokens_mask": torch.tensor([r.special_tokens_mask for r in rows], dtype=torch.long),
        "offset_mapping": torch.tensor([r.offsets for r in rows], dtype=torch.long).reshape(len(rows), -1, 2),
    }
    if return_overflowing:
        out["overflow_to_sample_mapping"] = torch.tensor(sample, dtype=torch.long)
    else:  # not silent: how many windows each row lost to truncation
        out["num_overflowing"] = torch.tensor([len(e.overflowing) for e in encodings], dtype=torch.long)
    return out
