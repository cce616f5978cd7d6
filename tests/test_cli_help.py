"""The CLI's help names every family the family record knows, so adding a family cannot leave it stale;
`--version` answers the package's version; progress goes to a log as whole lines."""

import argparse
import io

import pytest

from bertology import __version__
from bertology.cli import build_parser, main
from bertology.models.family import FAMILIES, PRETRAINABLE
from bertology.progress import progress_bar


def _help(*command: str) -> str:
    """`bertology --help`, or the line that describes `command` in it."""
    parser = build_parser()
    if not command:
        return parser.format_help()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return next(a.help for a in commands._choices_actions if a.dest == command[0])


@pytest.mark.parametrize(
    "command, families", [((), FAMILIES), (("pretrain",), PRETRAINABLE), (("demo",), PRETRAINABLE)]
)
def test_help_names_every_family(command, families):
    text = _help(*command).lower()
    missing = [name for name in families if name not in text]
    assert not missing, f"`bertology {' '.join(command)} --help` does not name {missing}"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"bertology {__version__}"


def test_progress_in_a_log_is_whole_lines():
    log = io.StringIO()
    bar = progress_bar(total=1000, desc="train", unit="step", file=log, mininterval=0, delay=0)
    for _ in range(1000):
        bar.update(1)
    bar.close()
    text = log.getvalue()
    assert "\r" not in text and "#" not in text
    lines = text.splitlines()
    assert len(lines) == 10 and lines[0].startswith("train:  10%") and lines[-1].startswith("train: 100%")


def test_a_short_phase_says_nothing_in_a_log():
    log = io.StringIO()
    with progress_bar(total=3, desc="quick", file=log) as bar:
        bar.update(3)
    assert log.getvalue() == ""
