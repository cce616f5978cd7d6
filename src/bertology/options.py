"""Options declared once: a job's dataclass field is its command-line flag, default, help and valid range.

    >>> @dataclass
    ... class Job:
    ...     steps: int = option(100, "optimizer steps", check=POSITIVE)
    ...     def __post_init__(self):
    ...         check_options(self)
    >>> Job(steps=0)
    Traceback (most recent call last):
    ...
    bertology.options.OptionError: --steps 0: must be ≥ 1 (optimizer steps)

`add_arguments(parser, Job)` adds `--steps` (type int, default 100, the help and the default shown)
and `from_args(Job, args)` builds the dataclass from the parsed namespace, so the CLI and the
Python API share one declaration and one validation.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing
import warnings
from dataclasses import MISSING, dataclass
from typing import Any, Callable


class OptionError(ValueError):
    """An option value outside its range or choices; the message starts with the flag and value."""


@dataclass(frozen=True)
class Check:
    rule: str  # what a good value is, for the message: "≥ 1"
    accept: Callable[[Any], bool]


POSITIVE = Check("≥ 1", lambda v: v >= 1)
NON_NEGATIVE = Check("≥ 0", lambda v: v >= 0)
POSITIVE_NUMBER = Check("> 0", lambda v: v > 0)
PROBABILITY = Check("in [0, 1]", lambda v: 0 <= v <= 1)
DROPOUT = Check("in [0, 1)", lambda v: 0 <= v < 1)
MASKING_RATE = Check("in (0, 1]", lambda v: 0 < v <= 1)
DEVICE = Check(
    "auto, cpu, cuda or cuda:N", lambda v: v in ("auto", "cpu", "cuda") or (v.startswith("cuda:") and v[5:].isdigit())
)
FRACTION_OR_COUNT = Check(
    "a fraction in [0, 1) or a whole count ≥ 1", lambda v: v >= 0 and (v < 1 or float(v).is_integer())
)


def option(
    default: Any = MISSING,
    help: str = "",
    *,
    flag: str | None = None,
    choices: tuple | None = None,
    check: Check | None = None,
    metavar: str | None = None,
    cli: bool = True,
    default_factory: Callable[[], Any] | Any = MISSING,
    old_names: tuple[str, ...] = (),
    kw_only: bool = False,
) -> Any:
    """A dataclass field that also declares its flag (default --field-name), help, choices and range.
    `cli=False` keeps a field out of the parser (set from code, or from other flags). `old_names`: the
    field's earlier names, still accepted for one release with a deprecation line (`accepts_old_names`).
    `kw_only`: a job's own default for a field its base declares keyword-only (the base's place kept)."""
    meta = {
        "help": help,
        "flag": flag,
        "choices": choices,
        "check": check,
        "metavar": metavar,
        "cli": cli,
        "old_names": old_names,
    }
    only = {"kw_only": True} if kw_only else {}
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta, **only)
    return dataclasses.field(default=default, metadata=meta, **only)


def flag_of(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def old_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def renamed(cls: type) -> dict[str, dataclasses.Field]:
    """{old name: the field that now carries it} of an options dataclass."""
    return {old: f for f in dataclasses.fields(cls) for old in f.metadata.get("old_names", ())}


def deprecation(old: str, new: str) -> str:
    """The line an option's old spelling (a flag or a keyword) is answered with."""
    return f"{old} is now {new}; the old name goes in the next release"


def default_of(f: dataclasses.Field) -> Any:
    """A field's default value (None for a required one)."""
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else None


def accepts_old_names(cls: type) -> type:
    """Let the dataclass `cls` be built with its fields' `old_names` as keywords, each with a
    DeprecationWarning naming the new one: code written against the last release keeps working."""
    init, old = cls.__init__, renamed(cls)

    def __init__(self, *args, **kwargs):
        for name in [k for k in kwargs if k in old]:
            f = old[name]
            if f.name in kwargs:
                raise TypeError(f"{cls.__name__}: {name}= and {f.name}= are one option; give {f.name}= alone")
            warnings.warn(
                deprecation(f"{name}=", f"{f.name}= (the flag {flag_of(f)})"), DeprecationWarning, stacklevel=2
            )
            kwargs[f.name] = kwargs.pop(name)
        init(self, *args, **kwargs)

    __init__.__doc__, __init__.__wrapped__ = init.__doc__, init
    cls.__init__ = __init__
    return cls


class OldFlag(argparse.Action):
    """An option's earlier flag: stores into the option's field and says the new flag, once."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        warnings.warn(deprecation(option_string, self.new), FutureWarning)
        setattr(namespace, self.dest, values)


def _kind(annotation: Any) -> tuple[type, bool, bool]:
    """(element type, is a list, may be None) of a field's annotation."""
    args = typing.get_args(annotation)
    optional = type(None) in args
    if optional:
        annotation = next(a for a in args if a is not type(None))
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True, optional
    return annotation, False, optional


def check_options(obj: Any) -> None:
    """Raise OptionError for the first field whose value has the wrong type, is not one of its
    choices, or is outside its range."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        kind, is_list, optional = _kind(hints[f.name])
        if value is None:
            if optional:
                continue
            raise OptionError(f"{flag_of(f)}: required")
        for v in value if is_list else [value]:
            _check_one(f, kind, v)


def _check_one(f: dataclasses.Field, kind: type, v: Any) -> None:
    where = f"{flag_of(f)} {v!r}" if isinstance(v, str) else f"{flag_of(f)} {v}"
    if kind in (int, float) and (
        isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not isinstance(v, int))
    ):
        raise OptionError(f"{where}: not {'an integer' if kind is int else 'a number'}")
    if kind is float and not math.isfinite(v):
        raise OptionError(f"{where}: not a finite number")
    choices, check = f.metadata.get("choices"), f.metadata.get("check")
    if choices and v not in choices:
        raise OptionError(f"{where}: choose one of {', '.join(map(str, choices))}")
    if check is not None and not check.accept(v):
        help = f.metadata.get("help")
        raise OptionError(f"{where}: must be {check.rule}" + (f" ({help})" if help else ""))


def add_arguments(parser: argparse.ArgumentParser, cls: type, skip: tuple[str, ...] = ()) -> None:
    """One argument per field of `cls` (except `skip` and cli=False fields), typed, with its default in the help."""
    hints = typing.get_type_hints(cls)
    for f in sorted(dataclasses.fields(cls), key=lambda f: f.kw_only):  # a job's own options first, shared ones after
        if f.name in skip or not f.metadata.get("cli", True):
            continue
        kind, is_list, _ = _kind(hints[f.name])
        required = f.default is MISSING and f.default_factory is MISSING
        help = f.metadata.get("help", "").replace("%", "%%")  # argparse formats help with %
        kw: dict[str, Any] = {"dest": f.name}
        if kind is bool:
            if f.default is True:  # a default-on switch is turned off with --no-NAME
                parser.add_argument("--no-" + flag_of(f)[2:], action="store_false", help=help, **kw)
            else:
                parser.add_argument(flag_of(f), action="store_true", help=help, **kw)
            continue
        kw.update(type=kind, help=help, metavar=f.metadata.get("metavar") or {int: "N", float: "X"}.get(kind))
        if f.metadata.get("choices"):
            kw["choices"] = f.metadata["choices"]
        if is_list:
            kw["nargs"] = "+"
        if required:
            kw["required"] = True
        else:
            kw["default"] = f.default
            if f.default is not None and help:
                kw["help"] = f"{help} (default {f.default})"
        parser.add_argument(flag_of(f), **kw)
        for name in f.metadata.get("old_names", ()):  # hidden from the help; said when used
            kind_kw = {k: v for k, v in kw.items() if k in ("type", "choices", "nargs", "metavar")}
            parser.add_argument(
                old_flag(name), dest=f.name, action=OldFlag, new=flag_of(f), help=argparse.SUPPRESS, **kind_kw
            )


def from_args(cls: type, args: argparse.Namespace, **fixed: Any):
    """The dataclass `cls` from parsed arguments (fields the parser has) and `fixed` values."""
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **fixed})


def refuse_unread(obj: Any, fields: tuple[str, ...], read_by: str) -> None:
    """An OptionError naming every field of `fields` set away from its default, when this run does not read
    them (`read_by` says which runs do): an option that would change nothing is refused, not ignored."""
    declared = {f.name: f for f in dataclasses.fields(obj)}
    given = []
    for name in fields:
        f = declared[name]
        if getattr(obj, name) != default_of(f):
            given.append(flag_of(f) if f.type != "bool" or getattr(obj, name) else "--no-" + flag_of(f)[2:])
    refuse_given(given, read_by)


def refuse_given(given: list[str], read_by: str) -> None:
    """An OptionError naming the flags `given` that this run does not read (`read_by` says which runs do).

    >>> refuse_given(["--seed"], "--optimizer adam")
    Traceback (most recent call last):
    ...
    bertology.options.OptionError: --seed: read by --optimizer adam alone; this run would ignore it
    """
    if given:
        raise OptionError(
            f"{', '.join(given)}: read by {read_by} alone; this run would ignore {'them' if len(given) > 1 else 'it'}"
        )


@dataclass
class DeviceOptions:
    """`--device` of the commands whose other arguments are plain flags (evaluate, predict, demo)."""

    device: str = option(
        "auto", "where the job runs: auto (a CUDA GPU when there is one), cpu, cuda or cuda:N", check=DEVICE
    )

    def __post_init__(self):
        check_options(self)
