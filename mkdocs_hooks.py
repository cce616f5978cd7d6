"""mkdocs hooks (mkdocs.yml `hooks:`): docstring examples shown as code, and the CLI reference page.

The docstrings carry doctest examples (`>>> ...` lines and their output), which markdown would read
as nested block quotes; this turns each run of them into a fenced `pycon` block, without the
`# doctest:` directives, for the pages and for the API reference mkdocstrings renders.

docs/cli.md is generated from the parser (`bertology.cli.reference_markdown`) before the pages are
read, so `make docs` always publishes the options the code has; the file is kept in the repository
(it reads on GitHub too) and tests/test_cli_reference.py fails when it differs from the parser.
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown import Extension
from markdown.preprocessors import Preprocessor

DIRECTIVE = re.compile(r"\s*# doctest:.*$")


class DoctestBlocks(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out, i, fence = [], 0, None
        while i < len(lines):
            line = lines[i]
            stripped = line.lstrip()
            if stripped.startswith(("```", "~~~")):  # never inside a fence already written
                fence = None if fence and stripped.startswith(fence) else (fence or stripped[:3])
            if fence is None and line.startswith(">>>"):
                block = []
                while i < len(lines) and lines[i].strip():
                    block.append(DIRECTIVE.sub("", lines[i]))
                    i += 1
                out += ["", "```pycon", *block, "```", ""]
                continue
            out.append(line)
            i += 1
        return out


class DoctestBlocksExtension(Extension):
    def extendMarkdown(self, md):
        md.preprocessors.register(DoctestBlocks(md), "doctest_blocks", 40)  # before the fences are read (25–30)


def on_config(config):
    config.markdown_extensions.append(DoctestBlocksExtension())
    return config


def on_pre_build(config):
    from bertology.cli import reference_markdown

    page = Path(config["docs_dir"]) / "cli.md"
    text = reference_markdown()
    if not page.is_file() or page.read_text(encoding="utf-8") != text:  # unchanged: `mkdocs serve` sees no edit
        page.write_text(text, encoding="utf-8")
