"""Truncation of single sequences and pairs, with overflowing windows, and padding: as `tokenizers` does them.

A Tokenizer keeps both settings as plain dicts, checked by `truncation_settings` and
`padding_settings`; `resolve_truncation` / `resolve_padding` merge them with the arguments of one
encode_batch call.

    truncation  {"max_length", "stride", "strategy", "direction"}
    padding     {"length" (None: the longest), "direction", "pad_id", "pad_type_id", "pad_token",
                 "pad_to_multiple_of"}
"""

from __future__ import annotations

from .encoding import Encoding

# our name -> tokenizer.json's
TRUNCATION_STRATEGIES = {"longest_first": "LongestFirst", "only_first": "OnlyFirst", "only_second": "OnlySecond"}
_DIRECTIONS = ("left", "right")
# tried in order when padding is asked for and none was set up
DEFAULT_PAD_TOKENS = ("[PAD]", "<pad>", "<|padding|>")


def truncation_settings(
    max_length: int, stride: int = 0, strategy: str = "longest_first", direction: str = "right"
) -> dict:
    """The checked truncation settings.

    >>> truncation_settings(8)
    {'max_length': 8, 'stride': 0, 'strategy': 'longest_first', 'direction': 'right'}
    """
    if strategy not in TRUNCATION_STRATEGIES:
        raise ValueError(f"truncation strategy must be one of {sorted(TRUNCATION_STRATEGIES)}, got {strategy!r}")
    if direction not in _DIRECTIONS:
        raise ValueError(f"truncation direction must be 'left' or 'right', got {direction!r}")
    return {"max_length": max_length, "stride": stride, "strategy": strategy, "direction": direction}


def padding_settings(
    direction: str = "right",
    pad_id: int = 0,
    pad_type_id: int = 0,
    pad_token: str = "[PAD]",
    length: int | None = None,
    pad_to_multiple_of: int | None = None,
) -> dict:
    """The checked padding settings."""
    if direction not in _DIRECTIONS:
        raise ValueError(f"padding direction must be 'left' or 'right', got {direction!r}")
    return {
        "length": length,
        "direction": direction,
        "pad_id": pad_id,
        "pad_type_id": pad_type_id,
        "pad_token": pad_token,
        "pad_to_multiple_of": pad_to_multiple_of,
    }


def resolve_truncation(setting: dict | None, truncation, max_length: int | None, stride: int) -> dict | None:
    """The truncation one encode_batch call uses: `truncation` None keeps the tokenizer's
    `setting` (with max_length / stride overridden when given), False turns it off, True or a
    strategy name turns it on.

    >>> resolve_truncation(None, True, 16, 0)["strategy"]
    'longest_first'
    """
    if truncation is None:
        if setting is None:
            return None
        t = dict(setting)
        if max_length is not None:
            t["max_length"] = max_length
        if stride:
            t["stride"] = stride
        return t
    if truncation is False:
        return None
    strategy = "longest_first" if truncation is True else truncation
    if strategy not in TRUNCATION_STRATEGIES:
        raise ValueError(
            f"truncation must be True, False or one of {sorted(TRUNCATION_STRATEGIES)}, got {truncation!r}"
        )
    if max_length is None:
        if setting is None:
            raise ValueError("truncation needs max_length (none given and none set by enable_truncation)")
        max_length = setting["max_length"]
    return {"max_length": max_length, "stride": stride, "strategy": strategy, "direction": "right"}


def resolve_padding(
    setting: dict | None, padding, max_length: int | None, truncation: dict | None, token_to_id
) -> dict | None:
    """The padding one encode_batch call uses: `padding` None keeps the tokenizer's `setting`,
    False turns it off, True / "longest" pads to the longest, "max_length" to max_length (or
    the set length, or the truncation's max_length). Without a setting, the pad token is the
    first of DEFAULT_PAD_TOKENS that token_to_id knows."""
    if padding is None:
        return dict(setting) if setting is not None else None
    if padding is False:
        return None
    base = dict(setting) if setting is not None else _default_padding(token_to_id)
    if padding is True or padding == "longest":
        base["length"] = None
    elif padding == "max_length":
        if max_length is None:
            max_length = base.get("length") or (truncation or {}).get("max_length")
        if max_length is None:
            raise ValueError("padding='max_length' needs max_length")
        base["length"] = max_length
    else:
        raise ValueError(f"padding must be True, False, 'longest' or 'max_length', got {padding!r}")
    return base


def _default_padding(token_to_id) -> dict:
    for tok in DEFAULT_PAD_TOKENS:
        i = token_to_id(tok)
        if i is not None:
            return padding_settings(pad_id=i, pad_token=tok)
    raise ValueError(
        "padding needs a pad token: none of [PAD], <pad> is in the vocabulary; "
        "call enable_padding(pad_id=..., pad_token=...)"
    )


def truncate_pair(
    enc: Encoding, pair: Encoding | None, max_length: int, stride: int, strategy: str, direction: str
) -> None:
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
            raise ValueError(
                f"truncation {strategy!r}: the sequence has {len(target)} tokens, too few to remove "
                f"the {to_remove} needed to reach max_length={max_length}"
            )
        target.truncate(len(target) - to_remove, stride, direction)
    else:
        raise ValueError(f"unknown truncation strategy {strategy!r}")


def pad_encodings(
    encodings: list[Encoding],
    length: int | None = None,
    direction: str = "right",
    pad_id: int = 0,
    pad_type_id: int = 0,
    pad_token: str = "[PAD]",
    pad_to_multiple_of: int | None = None,
) -> None:
    """Pad to `length`, or to the longest encoding when length is None (overflowing too)."""
    if not encodings:
        return
    target = length if length is not None else max(len(e) for e in encodings)
    if pad_to_multiple_of and target % pad_to_multiple_of:
        target += pad_to_multiple_of - target % pad_to_multiple_of
    for e in encodings:
        e.pad(target, pad_id, pad_type_id, pad_token, direction)
