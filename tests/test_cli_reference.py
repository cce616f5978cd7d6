"""docs/cli.md, the command-line reference, is the parser's: a section per command and subcommand, every
option with its default and help. `make docs` rewrites it (mkdocs_hooks.py); this test fails when the page
and the parser differ, so a new or changed option cannot leave it stale."""

import argparse
from pathlib import Path

from bertology.cli import build_parser, reference_markdown

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"


def test_the_page_is_the_parsers():
    assert PAGE.read_text(encoding="utf-8") == reference_markdown(), (
        "docs/cli.md differs from the parser: run `make docs` (it rewrites the page) and commit docs/cli.md"
    )


def _commands(parser, prog="bertology"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prog} {name}", sub
                yield from _commands(sub, f"{prog} {name}")


def test_every_command_and_option_has_its_place():
    page = reference_markdown()
    for prog, parser in _commands(build_parser()):
        section = page.split(f"# `{prog}`\n", 1)[1]  # IndexError: no section for the command
        options = [s for a in parser._actions for s in a.option_strings if s not in ("-h", "--help")]
        assert all(f"`{s}" in section or f", {s}" in section for s in options), prog


def test_defaults_and_help_are_the_options():
    page = reference_markdown()
    pretrain = page.split("## `bertology pretrain`\n", 1)[1].split("\n## ", 1)[0]
    line = next(line for line in pretrain.splitlines() if line.startswith("- `--max-length"))
    assert line == "- `--max-length N` (default `128`): tokens per sequence, special tokens included"
    assert "- `--family {bert,roberta,albert,xlnet,electra}` (required): the model family" in pretrain
    assert "- `--no-unigram-prior` (switch): " in pretrain and "- `--bf16` (switch): " in pretrain
    assert "### `bertology tokenizer train`" in page and "### `bertology wordvec train`" in page
