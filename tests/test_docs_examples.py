"""The documentation holds: every page's Python examples run as written, the README stays a front
page, and every relative link of the README and the pages points at something that exists.

A page's fenced ```python blocks run in order in one fresh namespace and an empty temporary
directory, as a reader pastes them, in the integration tier; the fast tier compiles every block.
```python notest blocks (a running server, a GPU, a long job) are only compiled; ```python
integration marks a block as slow or importing a heavy peer (both kinds run with the whole page).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md")) + [README]
MAX_README_LINES = 200
KINDS = ("run", "notest", "integration")

FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>```+|~~~+)(?P<info>[^`\n]*)$")


def fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """(first line number, info string, body) of each fenced block, in order.

    >>> fenced_blocks("a\\n```python notest\\nx = 1\\n```\\n")
    [(3, 'python notest', 'x = 1\\n')]
    """
    blocks, lines, i = [], text.splitlines(keepends=True), 0
    while i < len(lines):
        m = FENCE.match(lines[i].rstrip("\n"))
        if not m:
            i += 1
            continue
        fence, start, body = m["fence"], i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(m["indent"]) :] if lines[i].startswith(m["indent"]) else lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"line {start}: a fenced block that never closes")
        blocks.append((start + 1, m["info"].strip(), "".join(body)))
        i += 1
    return blocks


def python_examples(path: Path) -> list[tuple[int, str, str]]:
    """(line, kind, code) of a page's Python blocks; kind is run, notest or integration."""
    examples = []
    for line, info, body in fenced_blocks(path.read_text(encoding="utf-8")):
        words = info.split()
        if not words or words[0] != "python":
            continue
        kind = words[1] if len(words) > 1 else "run"
        if kind not in KINDS or len(words) > 2:
            raise ValueError(
                f"{path.name}:{line}: unknown marks {info!r} (a python block is plain, notest or integration)"
            )
        examples.append((line, kind, body))
    return examples


def run_page(path: Path, kinds: tuple[str, ...], tmp_path: Path, monkeypatch) -> int:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__docs__"}
    ran = 0
    for line, kind, code in python_examples(path):
        compiled = compile(code, f"{path.relative_to(ROOT)}:{line}", "exec")  # notest blocks are checked this far
        if kind in kinds:
            exec(compiled, namespace)
            ran += 1
    return ran


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", PAGES, ids=_id)
def test_page_examples_compile(path, tmp_path, monkeypatch):
    run_page(path, (), tmp_path, monkeypatch)


RUNNABLE_PAGES = [p for p in PAGES if any(kind != "notest" for _, kind, _ in python_examples(p))]


# whole pages run with the jobs: together they load models and train tokenizers for tens of seconds,
# more than make test's budget on the slowest CPU allows
@pytest.mark.integration
@pytest.mark.parametrize("path", RUNNABLE_PAGES, ids=_id)
def test_page_examples_run(path, tmp_path, monkeypatch):
    assert run_page(path, ("run", "integration"), tmp_path, monkeypatch) > 0


def test_every_capability_page_shows_runnable_python():
    runnable = {p.name for p in PAGES if any(kind != "notest" for _, kind, _ in python_examples(p))}
    for page in (
        "models.md",
        "xlnet.md",
        "electra.md",
        "tokenizers.md",
        "pretraining.md",
        "continued-pretraining.md",
        "distillation.md",
        "finetuning.md",
        "wordvec.md",
        "graphs.md",
        "attention.md",
        "serving.md",
        "export.md",
        "README.md",
    ):
        assert page in runnable, f"{page} has no Python example that runs"


def test_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines; the front page keeps to {MAX_README_LINES}"
    )
    commands = [line.split("#")[0].strip() for line in lines if line.startswith("make ")]
    assert commands[:2] == ["make demo", "make test"], "the README's first two commands are make demo and make test"


# ---- links ------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default slugify).

    >>> slug("`--resume` continues the same run")
    '-resume-continues-the-same-run'
    >>> slug("Few labels: subsets, heads for MLM-only encoders")
    'few-labels-subsets-heads-for-mlm-only-encoders'
    """
    text = unicodedata.normalize("NFKD", heading.replace("`", "")).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    text = _without_code(path.read_text(encoding="utf-8"), inline=False)
    return {slug(m[1]) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)}


def _without_code(text: str, inline: bool = True) -> str:
    """The text without its fenced blocks and (`inline`) inline code: a link inside code is not a link."""
    out, inside = [], None
    for line in text.splitlines():
        m = FENCE.match(line)
        if m and (inside is None or line.strip().startswith(inside)):
            inside = m["fence"] if inside is None else None
            continue
        if inside is None:
            out.append(re.sub(r"`[^`]*`", "", line) if inline else line)
    return "\n".join(out)


def relative_links(path: Path) -> list[str]:
    return [
        t
        for t in LINK.findall(_without_code(path.read_text(encoding="utf-8")))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", t)
    ]  # http:, https:, mailto: … are not checked here


@pytest.mark.parametrize("path", PAGES, ids=_id)
def test_relative_links_resolve(path):
    broken = []
    for target in relative_links(path):
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.name}")
    assert not broken, f"{path.name}: " + "; ".join(broken)


def test_the_link_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## `--flag` here\n\n[ok](#title) [gone](missing.md) ![img](x.png) `[code](no.md)`\n"
        "```\n[fenced](no.md)\n```\n[web](https://example.org)\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["#title", "missing.md", "x.png"]
    assert anchors(page) == {"title", "-flag-here"}
