"""Every page's shell examples run as a reader types them, and say what the page says they do.

A page's fenced ```bash (or sh, shell) blocks run in page order, each block as one `bash -e -o
pipefail` script, in a fresh temporary directory per page with `bertology` and `python` from this
venv first on PATH; ```console blocks run their `$ ` lines and their printed lines must appear in
the output (a `…` line or a trailing `…` stands for lines left out). The directory holds what a
reader who followed the README has at that point: the demo's data under data/ (cut to a few hundred
lines, see `small_data`), and, where a page builds on an earlier page's run, a tiny runs/bert
(pretraining.md's first command) and runs/debian (finetuning.md's first command).

The pages show real budgets (`--steps 2000`, `--time-budget 30`, `--epochs 3`); the run cuts them
with the few rewrites in SHRINK, so a page runs in seconds. After each block, every `--out PATH`
and `> PATH` of a command that ran exists, and the checks in CLAIMS hold the page's other claims.

A block that cannot run here (a GPU, a server in the foreground, several machines, a 20-minute
demo, a long benchmark, a file only the reader has) is marked ```bash notest (```console notest),
and the page says why beside it, in a sentence naming "the docs' test"; the fast tier checks every
block has a language, every shell block is marked or parses with `bash -n`, every mark is known,
and every notest block has its reason beside it.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_docs_examples import PAGES, ROOT, fenced_blocks

SHELLS = ("bash", "sh", "shell", "console")
NOT_SHELL = ("python", "text", "diff", "json", "yaml", "toml", "ini", "html", "mermaid")
MARKS = ("notest",)
BIN = Path(sys.executable).parent
BLOCK_TIMEOUT_S = 240

# The budgets the pages show, cut for the test run (the pages keep the real ones).
SHRINK = [
    (re.compile(r"--steps \d{2,}"), "--steps 2"),
    (re.compile(r"--time-budget \d+"), "--steps 2"),
    (re.compile(r"--epochs \d+"), "--epochs 1"),
    (re.compile(r"--seeds 0,1,2"), "--seeds 0"),
    (re.compile(r"--eval-every \d+"), "--eval-every 1"),
    (re.compile(r"--pairs-per-example \d+"), "--pairs-per-example 2"),
    (
        re.compile(r"(bertology (?:pretrain|distill)) "),
        r"\1 --eval-batches 1 --batch-size 8 ",
    ),  # a page's own --batch-size comes later and wins
]


def shrink(script: str) -> str:
    """The script with the pages' budgets cut to a test's.

    >>> shrink("bertology pretrain --steps 2000 --time-budget 30 --epochs 3")
    'bertology pretrain --eval-batches 1 --batch-size 8 --steps 2 --steps 2 --epochs 1'
    """
    for pattern, short in SHRINK:
        script = pattern.sub(short, script)
    return script


def shell_blocks(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, language, mark, body) of a page's shell blocks; mark is run or notest."""
    blocks = []
    for line, info, body in fenced_blocks(path.read_text(encoding="utf-8")):
        words = info.split()
        if not words:
            raise ValueError(f"{path.name}:{line}: a fenced block without a language (bash, console, text, ...)")
        if words[0] not in SHELLS:
            continue
        mark = words[1] if len(words) > 1 else "run"
        if mark not in ("run", *MARKS) or len(words) > 2:
            raise ValueError(f"{path.name}:{line}: unknown marks {info!r} (a shell block is plain or notest)")
        blocks.append((line, words[0], mark, body))
    return blocks


def console_script(body: str) -> tuple[str, list[str]]:
    """A ```console block's commands (`$ ` lines and their continuations) and its printed lines.

    >>> console_script("$ echo a \\\\\\n  b\\na b\\n")
    ('echo a \\\\\\n  b\\n', ['a b'])
    """
    commands, printed, continued = [], [], False
    for line in body.splitlines():
        if line.startswith("$ ") or continued:
            commands.append(line[2:] if line.startswith("$ ") and not continued else line)
            continued = line.endswith("\\")
        else:
            printed.append(line)
    return "".join(c + "\n" for c in commands), printed


def _squash(text: str) -> str:
    return " ".join(text.split())


def expected_in(printed: list[str], output: str) -> list[str]:
    """The printed runs of lines (split at `…`) that the output lacks, whitespace aside."""
    runs, run = [], []
    for line in printed + ["…"]:
        if line.strip() == "…" or line.rstrip().endswith("…"):
            if line.strip() != "…":
                run.append(line.rstrip()[:-1])
            if run:
                runs.append(_squash("\n".join(run)))
            run = []
        else:
            run.append(line)
    have = _squash(output)
    return [r for r in runs if r and r not in have]


# ---- fast tier --------------------------------------------------------------------------------


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", PAGES, ids=_id)
def test_every_shell_block_is_marked_or_parses(path):
    bad = []
    for line, language, mark, body in shell_blocks(path):
        if mark == "notest":
            continue
        script = console_script(body)[0] if language == "console" else body
        done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        if done.returncode:
            bad.append(f"{path.name}:{line}: {done.stderr.strip()}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", PAGES, ids=_id)
def test_every_block_names_its_language(path):
    for line, info, _ in fenced_blocks(path.read_text(encoding="utf-8")):
        language = info.split()[0] if info.split() else ""
        assert language in SHELLS + NOT_SHELL, (
            f"{path.name}:{line}: fence language {language!r} is not one of {SHELLS + NOT_SHELL}"
        )


REASON = "docs' test"  # the words a page uses beside a block it marks notest, saying why


@pytest.mark.parametrize("path", PAGES, ids=_id)
def test_every_unrun_shell_block_says_why(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    silent = []
    for line, _, mark, body in shell_blocks(path):
        if mark != "notest":
            continue
        end = line + len(body.splitlines())  # the closing fence's line number
        near = lines[max(0, line - 8) : line - 1] + body.splitlines()[:1] + lines[end : end + 3]
        if not any(REASON in text for text in near):
            silent.append(f"{path.name}:{line}")
    assert not silent, f"marked notest without the page saying why (beside it, '{REASON}'): {silent}"


def test_console_transcripts_are_read_as_printed():
    assert expected_in(["a  b", "…", "c"], "x a b y\nc\n") == []
    assert expected_in(["a b …", "d"], "a b c\nd") == []
    assert expected_in(["a b"], "a c") == ["a b"]


# ---- the reader's directory -------------------------------------------------------------------


def _stratified(src: Path, dst: Path, per_label: int) -> None:
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    seen: dict[str, int] = {}
    kept = [lines[0]]
    for line in lines[1:]:
        label = line.rstrip("\n").split("\t")[-1]
        if seen.get(label, 0) < per_label:
            seen[label] = seen.get(label, 0) + 1
            kept.append(line)
    dst.write_text("".join(kept), encoding="utf-8")


def _head_xz(src: Path, dst: Path, lines: int) -> None:
    with lzma.open(src, "rt", encoding="utf-8") as f:
        head = [next(f) for _ in range(lines)]
    with lzma.open(dst, "wt", encoding="utf-8") as f:
        f.writelines(head)


@pytest.fixture(scope="session")
def small_data(tmp_path_factory) -> Path:
    """The demo's data, cut: 1,500 package descriptions, 10 / 3 / 3 rows a section (10: the pages'
    --labels-per-class), the first 1,500 graph edges and vim's (graphs.md asks for its neighbours),
    and all of wiki.txt (2.4 MB: wordvec.md asks for king, woman and man)."""
    data = tmp_path_factory.mktemp("docs-data") / "data"
    src = ROOT / "data"
    (data / "debian-sections").mkdir(parents=True)
    for name, n in (("train", 10), ("dev", 3), ("test", 3)):
        _stratified(src / "debian-sections" / f"{name}.tsv", data / "debian-sections" / f"{name}.tsv", n)
    (data / "debian-descriptions").mkdir()
    _head_xz(
        src / "debian-descriptions" / "descriptions.txt.xz", data / "debian-descriptions" / "descriptions.txt.xz", 1500
    )
    (data / "debian-graph").mkdir()
    with lzma.open(src / "debian-graph" / "edges.tsv.xz", "rt", encoding="utf-8") as f:
        edges = [e for i, e in enumerate(f) if i < 1500 or "vim" in e.split()]
    with lzma.open(data / "debian-graph" / "edges.tsv.xz", "wt", encoding="utf-8") as f:
        f.writelines(edges)
    shutil.copy(src / "wiki.txt", data / "wiki.txt")
    return data


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env.pop("BERTOLOGY_TOKEN_CACHE", None)  # a page that sets it does so itself
    return env


def _bash(script: str, cwd: Path, timeout: int = BLOCK_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="session")
def earlier_runs(small_data, tmp_path_factory) -> Path:
    """runs/bert and runs/debian as pretraining.md's and finetuning.md's first commands make them, tiny."""
    home = tmp_path_factory.mktemp("docs-runs")
    (home / "data").symlink_to(small_data)
    done = _bash(
        "bertology pretrain --family bert --preset tiny --corpus data/debian-descriptions/descriptions.txt.xz "
        "--out runs/bert --steps 2 --batch-size 16 --max-length 32 --quiet\n"
        "bertology finetune --model runs/bert --task classify --train data/debian-sections/train.tsv "
        "--dev data/debian-sections/dev.tsv --out runs/debian --epochs 1 --max-length 48 --quiet\n",
        home,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return home / "runs"


# the earlier pages' runs a page builds on, as a reader who read the pages in order has them
NEEDS = {
    "README.md": (),
    "continued-pretraining.md": ("bert",),
    "data-formats.md": ("bert",),
    "distillation.md": ("bert",),
    "export.md": ("debian",),
    "finetuning.md": ("bert",),
    "pretraining.md": (),
    "attention.md": ("debian",),
}


# ---- the pages' claims ------------------------------------------------------------------------


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in _lines(path) if line.strip()]


def _labels(ws: Path) -> set[str]:
    return {line.split("\t")[-1] for line in _lines(ws / "data/debian-sections/train.tsv")[1:]}


def _claim_predictions(ws: Path, out: str) -> None:
    rows = _lines(ws / "data/debian-sections/test.tsv")[1:]
    got = _json_lines(ws / "predictions.jsonl")
    assert len(got) == len(rows), f"{len(got)} predictions for {len(rows)} texts"
    assert all(r["label"] in _labels(ws) for r in got), got[:2]


def _claim_encode(ws: Path, out: str) -> None:
    assert all(re.search(rf"^{key}:", out, re.M) for key in ("tokens", "ids", "offsets")), out  # tokens, ids, offsets
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert len(lines) == 2, f"two texts in, {len(lines)} JSON lines out"
    assert all("ids" in json.loads(line) for line in lines), lines


def _claim_export(ws: Path, out: str) -> None:
    for name in ("model.onnx", "config.json", "tokenizer.json", "export.json"):
        assert (ws / "runs/debian-onnx" / name).is_file(), name


def _claim_evaluate(ws: Path, out: str) -> None:
    accuracy = [float(x) for x in re.findall(r"accuracy\D{0,4}(\d\.\d+)", out)]
    assert accuracy and all(0 <= a <= 1 for a in accuracy), out


def _claim_similar(ws: Path, out: str) -> None:
    neighbours = [line for line in out.splitlines() if re.search(r"\d\.\d+", line)]
    assert len(neighbours) >= 5, out


def _claim_grid(ws: Path, out: str) -> None:
    assert re.search(r"test\D*\d\.\d+ ± \d\.\d+", out), out  # the test mean ± standard deviation at the chosen rate


def _claim_analogy(ws: Path, out: str) -> None:
    assert re.search(r"^-?\d\.\d+\t\S+$", out, re.M), out  # king - man + woman's neighbours: cosine, word


# (page, a piece of the block's text) -> the check of what the page says the block does
CLAIMS = {
    ("finetuning.md", "predictions.jsonl"): _claim_predictions,
    ("finetuning.md", "bertology evaluate"): _claim_evaluate,
    ("tokenizers.md", "tokenizer encode"): _claim_encode,
    ("export.md", "bertology export"): _claim_export,
    ("graphs.md", "wordvec similar"): _claim_similar,
    ("finetuning.md", "--grid 3e-4,1e-3"): _claim_grid,
    ("wordvec.md", "king woman --negative man"): _claim_analogy,
}

OUT = re.compile(r"(?:--out\s+|(?<![0-9&])>\s*)([^\s;|&]+)")


def outputs(script: str) -> list[str]:
    """The paths a script's commands say they write (`--out PATH`, `> PATH`).

    >>> outputs("bertology x --out runs/a --quiet\\nfoo > b.jsonl 2>&1\\n")
    ['runs/a', 'b.jsonl']
    """
    return [m for m in OUT.findall(script) if not m.startswith("&")]


SHELL_PAGES = [p for p in PAGES if any(mark == "run" for _, _, mark, _ in shell_blocks(p))]


@pytest.mark.integration
@pytest.mark.parametrize("path", SHELL_PAGES, ids=_id)
def test_page_shell_examples_run(path, small_data, request, tmp_path):
    (tmp_path / "data").symlink_to(small_data)
    needs = NEEDS.get(path.name, ())
    if needs:
        runs = request.getfixturevalue("earlier_runs")
        for name in needs:
            shutil.copytree(runs / name, tmp_path / "runs" / name, symlinks=True)
    ran = 0
    for line, language, mark, body in shell_blocks(path):
        if mark != "run":
            continue
        script, printed = console_script(body) if language == "console" else (body, [])
        started = time.monotonic()
        done = _bash(shrink(script), tmp_path)
        where = f"{path.name}:{line} ({time.monotonic() - started:.0f} s)"
        print(where)  # the blocks' times, with pytest -s
        output = done.stdout + done.stderr
        if printed:
            missing = expected_in(printed, output)
            assert not missing, f"{where}: the page prints {missing}, the run printed:\n{output[-3000:]}"
        else:
            assert done.returncode == 0, f"{where}: exit {done.returncode}\n{output[-3000:]}"
            for out in outputs(script):
                assert (tmp_path / out).exists(), f"{where}: the page says it writes {out}; it is not there"
        for (page, piece), check in CLAIMS.items():
            if page == path.name and piece in body:
                check(tmp_path, output)
        ran += 1
    assert ran > 0


def test_the_helpers_examples_hold():
    import doctest

    assert doctest.testmod(sys.modules[__name__]).failed == 0
