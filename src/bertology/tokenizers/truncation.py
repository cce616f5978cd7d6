"""Truncation of single sequences and pairs, with overflowing windows, and padding: as `tokenizers` does them."""
from __future__ import annotations

from .encoding import Encoding


def truncate_pair(enc: Encoding, pair: Encoding | None, max_length: int, stride: int, strategy: str,
                  direction: str) -> None:
    """Cut enc (and pair) to max_length tokens in all; the cut parts go to `overflowing`."""
    if max_length == 0:
        enc.truncate(0, stride, direction)
        if pair is not None:
            pair.truncate(0, stride, direction)
        return
    total = len(enc) + (len(pair) if pair is not None else 0)
    if total <= max_length:
        return
    to_remove = total - max_length
    if strategy == "longest_first":
        if pair is None:
            enc.truncate(max_length, stride, direction)
            return
        n1, n2 = len(enc), len(pair)
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        if swap:
            n1, n2 = n2, n1
        enc.truncate(n1, stride, direction)
        pair.truncate(n2, stride, direction)
    elif strategy in ("only_first", "only_second"):
        target = enc if strategy == "only_first" else pair
        if target is None:
            raise ValueError("truncation 'only_second' needs a pair of sequences")
        if len(target) <= to_remove:
            raise ValueError(f"truncation {strategy!r}: the sequence has {len(target)} tokens, too few to remove "
                             f"the {to_remove} needed to reach max_length={max_length}")
        target.truncate(len(target) - to_remove, stride, direction)
    else:
        raise ValueError(f"unknown truncation strategy {strategy!r}")


def pad_encodings(encodings: list[Encoding], length: int | None = None, direction: str = "right", pad_id: int = 0,
                  pad_type_id: int = 0, pad_token: str = "[PAD]", pad_to_multiple_of: int | None = None) -> None:
    """Pad to `length`, or to the longest encoding when length is None (overflowing too)."""
    if not encodings:
        return
    target = length if length is not None else max(len(e) for e in encodings)
    if pad_to_multiple_of and target % pad_to_multiple_of:
        target += pad_to_multiple_of - target % pad_to_multiple_of
    for e in encodings:
        e.pad(target, pad_id, pad_type_id, pad_token, direction)
