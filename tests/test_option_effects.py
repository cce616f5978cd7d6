"""No option is silently ignored, the other half: an option its mode reads changes what the user gets.

tests/test_option_modes.py declares, for every command, which options each mode reads (and checks that the
others are refused). Here each command that runs in seconds runs as a baseline (RUNS: a command's first run,
plus one run for each mode that reads options of its own; tiny data, tiny models), then once for every option
that run's modes read, with that option at another valid value (generated from its argparse action: a switch
flipped, a number moved, another choice; OVERRIDES where the generic value is invalid or cannot show on tiny
data), and the test asserts that something a user sees differs: the exit status, stdout (wall-time figures
masked), or the files under the run's output (safetensors by their tensors; JSON without wall-time fields and
without the record of the options themselves, options.json and summary.json's "options", which differ by
construction). A control runs each baseline twice and asserts the two are the same.

Every option of a command run here is tried, or said why not: EXEMPT (its effect cannot show in such a run),
REFUSED (the table says the mode reads it; the command refuses it there, naming it), UNRUN (read only in modes
no run here is in) and FINDINGS (read, changing nothing: strict xfails, so a fix fails here until its line
goes). Each of these lists is held to options that exist and that its runs read (or, UNRUN, do not read).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

import pytest

from bertology.cli import main
from test_option_modes import DECLARED, EVERY, MODES, PARSERS, _options

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

ROOT = Path(__file__).resolve().parents[1]

# each command's baseline run: the modes of MODES it is in, and its words ({d} the shared inputs, {o} the
# run's own output directory); a key without a dash is a positional (its metavar), given in order
RUNS: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]] = {
    "params": ((), {"PRESET_OR_CONFIG": ["bert-tiny"]}),
    "pretrain": (
        (
            "--objective mlm+nsp",
            "steps",
            "held-out text",
            "text files",
            "a tokenizer trained on the corpus",
            "a preset",
        ),
        {
            "--family": ["bert"],
            "--preset": ["tiny"],
            "--corpus": ["{d}/corpus.txt"],
            "--out": ["{o}"],
            "--vocab-size": ["300"],
            "--batch-size": ["4"],
            "--max-length": ["32"],
            "--steps": ["2"],
            "--heldout": ["2"],
            "--dupe-factor": ["1"],
            "--save-every": ["1"],
        },
    ),
    "distill": (
        ("--target tokens", "steps", "held-out text", "text files"),
        {
            "--teacher": ["{d}/pretrained"],
            "--corpus": ["{d}/corpus.txt"],
            "--out": ["{o}"],
            "--batch-size": ["4"],
            "--max-length": ["32"],
            "--steps": ["2"],
            "--heldout": ["4"],
            "--save-every": ["1"],
        },
    ),
    "finetune": (
        ("a single run", "--method head", "--task classify", "all the training file", "checkpoints"),
        {
            "--model": ["{d}/pretrained"],
            "--task": ["classify"],
            "--train": ["{d}/train.tsv"],
            "--dev": ["{d}/dev.tsv"],
            "--out": ["{o}"],
            "--epochs": ["2"],
            "--lr": ["1e-3"],
            "--batch-size": ["8"],
            "--max-length": ["32"],
        },
    ),
    "evaluate": ((), {"--model": ["{d}/finetuned"], "--data": ["{d}/dev.tsv"]}),
    "predict": (  # --json: the probabilities in full (the table rounds them)
        ("TEXT",),
        {"--model": ["{d}/finetuned"], "TEXT": ["a word processor", "a game of chess"], "--json": []},
    ),
    "baseline": (("--optimizer lbfgs",), {"TRAIN": ["{d}/train.tsv"], "FILE": ["{d}/dev.tsv"]}),
    "attention": (
        ("a PNG",),
        {"--model": ["{d}/pretrained"], "--text": ["the cat sat on the mat"], "--out": ["{o}/attention.png"]},
    ),
    "tokenizer train": (
        ("--algorithm wordpiece",),
        {"FILE": ["{d}/corpus.txt"], "--out": ["{o}"], "--vocab-size": ["300"]},
    ),
    "tokenizer encode": ((), {"--tokenizer": ["{d}/tokenizer.json"], "text": ["the cat sat on the mat"]}),
    "export": (("--format onnx",), {"DIR": ["{d}/finetuned"], "OUT": ["{o}/model"]}),
    "wordvec train": (
        ("--algorithm cbow", "text"),
        {
            "FILE": ["{d}/corpus.txt"],
            "--out": ["{o}/vectors.txt"],
            "--vector-size": ["8"],
            "--epochs": ["1"],
            "--min-count": ["1"],
            "--workers": ["1"],
        },
    ),
    "wordvec eval": (
        (),
        {"VECTORS": ["{d}/vectors.txt"], "--analogies": ["{d}/analogies.txt"], "--pairs": ["{d}/pairs.tsv"]},
    ),
    "wordvec similar": ((), {"VECTORS": ["{d}/vectors.txt"], "WORD": ["the"]}),
    "wordvec plot": ((), {"VECTORS": ["{d}/vectors.txt"], "--out": ["{o}/plot.png"], "--pairs": ["the:of,and:in"]}),
}


def _with(
    run: str, *modes: str, leaving: tuple[str, ...] = (), **words: list[str] | None
) -> tuple[tuple[str, ...], dict[str, list[str]]]:
    """Another run of a command: `run`'s modes (less those `modes` switch and `leaving`) and words, `modes` and
    `words` added (a word's key is its flag without the leading dashes, _ for -; None drops it)."""
    base_modes, base_words = RUNS[run]
    switched = {m.split(" ")[0] for m in modes}
    kept = tuple(m for m in base_modes if m.split(" ")[0] not in switched and m not in leaving)
    changed = dict(base_words)
    for key, value in words.items():
        flag = key if key.isupper() else "--" + key.replace("_", "-")
        if value is None:
            changed.pop(flag, None)
        else:
            changed[flag] = value
    return (*kept, *modes), changed


# the mode-specific options: one more run for each mode that reads options the first run does not
RUNS.update(
    {
        "pretrain --objective mlm": _with("pretrain", "--objective mlm", objective=["mlm"]),
        "pretrain --objective rtd": _with("pretrain", "--objective rtd", family=["electra"]),
        "pretrain --objective simcse": _with("pretrain", "--objective simcse", objective=["simcse"], dupe_factor=None),
        "pretrain --objective tsdae": _with("pretrain", "--objective tsdae", objective=["tsdae"], dupe_factor=None),
        "pretrain --family xlnet": _with(
            "pretrain", "--family xlnet", leaving=("--objective mlm+nsp",), family=["xlnet"], dupe_factor=None
        ),
        "pretrain --init": _with(
            "pretrain",
            "--init",
            leaving=("a preset",),
            init=["{d}/pretrained"],
            preset=None,
            vocab_size=None,
            corpus=["{d}/corpus2.txt"],  # pieces new to the checkpoint, for --extend-vocab
        ),
        "distill --target sentence": _with("distill", "--target sentence", target=["sentence"]),
        "finetune --method prompt": _with("finetune", "--method prompt", method=["prompt"]),
        "finetune --method setfit": _with("finetune", "--method setfit", method=["setfit"], pooling=["mean"]),
        "finetune --task qa": _with(  # its windows' overlap (--stride) shows where contexts outgrow --max-length
            "finetune",
            "--task qa",
            task=["qa"],
            train=["{d}/squad_v1.json"],
            dev=None,
            max_length=["64"],
            stride=["8"],
            epochs=["1"],
        ),
        "finetune --labels-per-class": _with(
            "finetune", "--labels-per-class", leaving=("all the training file",), labels_per_class=["2"]
        ),
        "finetune --grid": _with(
            "finetune",
            "--grid",
            leaving=("a single run",),
            grid=["1e-3"],
            test=["{d}/dev2.tsv"],
            seeds=["0"],
            epochs=["1"],
        ),
        "predict --data": _with("predict", "--data", leaving=("TEXT",), TEXT=None, data=["{d}/dev.tsv"]),
        "baseline --optimizer adam": _with(  # Adam's batches are 64 rows: more to shuffle
            "baseline", "--optimizer adam", optimizer=["adam"], TRAIN=["{d}/train-big.tsv"]
        ),
        "export --format sentence-transformers": _with(
            "export", "--format sentence-transformers", format=["sentence-transformers"]
        ),
        "wordvec train --algorithm glove": _with("wordvec train", "--algorithm glove", algorithm=["glove"]),
        "wordvec train --graph": _with(
            "wordvec train",
            "--graph",
            "--walk node2vec",
            "--algorithm skipgram",
            leaving=("text",),
            FILE=["{d}/edges.txt"],
            graph=[],
            p=["2"],
            walk_length=["10"],
            num_walks=["2"],
        ),  # fmt: skip
    }
)

# the commands left out, and why
NOT_RUN = {
    "demo": "minutes even with --quick (tests/test_demo.py runs it whole); its options are job-wide switches",
    "serve": "a server: its options act on requests over time (tests/serve/ walks them against a live server)",
}

# options whose effect cannot show in a tiny run here, and why
EXEMPT: dict[str, dict[str, str]] = {
    "pretrain": {
        "--out": "where the files go: each run of this test has its own, and the comparison reads it",
        "--quiet": "drops the progress lines on stderr only (stdout and files as they were)",
        "--compile": "speed only (torch.compile), and seconds of compiling",
        "--device": "one device here: auto is the CPU (GPU runs: tests marked gpu)",
        "--resume": "acts on an earlier, interrupted run in --out (tests/train/test_resume_options.py, test_resume_finished.py)",
        "--overwrite": "acts on an earlier run in --out; into a fresh --out it has nothing to replace",
        "--time-budget": "wall time: the steps it allows differ from run to run (tests/train/test_command_budget.py)",
        "--text-column": "the switch to a table corpus: on this text corpus it is refused (no table format in .txt), and a table "
        "is another input, not this option's effect (tests/test_tables.py)",
    },
    "distill": {
        "--out": "where the files go: each run of this test has its own, and the comparison reads it",
        "--quiet": "drops the progress lines on stderr only (stdout and files as they were)",
        "--compile": "speed only (torch.compile), and seconds of compiling",
        "--device": "one device here: auto is the CPU (GPU runs: tests marked gpu)",
        "--resume": "acts on an earlier, interrupted run in --out (tests/train/test_resume_options.py, test_resume_finished.py)",
        "--overwrite": "acts on an earlier run in --out; into a fresh --out it has nothing to replace",
        "--time-budget": "wall time: the steps it allows differ from run to run (tests/train/test_command_budget.py)",
        "--text-column": "the switch to a table corpus: on this text corpus it is refused (no table format in .txt), and a table "
        "is another input, not this option's effect (tests/test_tables.py)",
    },
    "finetune": {
        "--out": "where the files go: each run of this test has its own, and the comparison reads it",
        "--quiet": "drops the progress lines on stderr only (stdout and files as they were)",
        "--compile": "speed only (torch.compile), and seconds of compiling",
        "--device": "one device here: auto is the CPU (GPU runs: tests marked gpu)",
        "--resume": "acts on an earlier, interrupted run in --out (tests/tasks/test_tasks_finetune.py)",
        "--overwrite": "acts on an earlier run in --out; into a fresh --out it has nothing to replace",
        "--grid": "the switch to the grid mode, several runs and a --test file (tests/tasks/test_tasks_grid.py)",
    },
    "finetune --grid": {
        "--workers": "grid runs side by side in processes: the same runs, sooner (tests/tasks/test_tasks_grid.py)",
    },
    "evaluate": {
        "--device": "one device here: auto is the CPU (GPU runs: tests marked gpu)",
        "--int8": "metrics rounded to 4 places over a dozen rows do not move; predict --int8 shows it on this model",
    },
    "predict": {"--device": "one device here: auto is the CPU (GPU runs: tests marked gpu)"},
    "tokenizer train": {
        "--out": "where the file goes: each run of this test has its own, and the comparison reads it",
    },
    "export": {
        "OUT": "where the files go: each run of this test has its own, and the comparison reads it",
        "--overwrite": "acts on an earlier export in OUT; into a fresh OUT it has nothing to replace",
    },
    "wordvec train": {
        "--out": "where the file goes: each run of this test has its own, and the comparison reads it",
        "--workers": "training threads: this tiny corpus is one job, so 1 and 2 threads train alike; on a "
        "real corpus threads change the order of lock-free updates, not what is trained",
    },
    "wordvec plot": {
        "--out": "where the file goes: each run of this test has its own, and the comparison reads it",
    },
}

# options read only in modes no run here is in, and why those modes are not run
UNRUN: dict[str, dict[str, str]] = {
    "pretrain": {"--budget-warmup": "read under --time-budget alone: wall time, its steps differ run to run"},
    "distill": {"--budget-warmup": "read under --time-budget alone: wall time, its steps differ run to run"},
}

# options the table declares as read by the baseline's modes that the command refuses there itself, naming them
# (not silent, but tests/test_option_modes.py could say so: see its DECLARED)
REFUSED: dict[str, dict[str, tuple[list[str], str]]] = {
    "pretrain": {
        "--temperature": (["0.1"], "simcse option"),  # read by --objective simcse alone
        "--deletion-ratio": (["0.3"], "tsdae option"),  # read by --objective tsdae alone
        # mlm+nsp reads segment pairs only ('pairs', its default): the other packings are mlm's, rtd's …
        "--packing": (["full-sentences"], "packing 'full-sentences'"),
    },
    "pretrain --init": {"--init-generator": (["{d}/pretrained"], "ELECTRA")},  # a BERT checkpoint has no generator
}

# options read but changing nothing: defects found by this test, left to the code that owns them (strict xfails,
# so that the fix fails here until its line goes)
FINDINGS: dict[str, dict[str, str]] = {}

# where the generated value is invalid or cannot show on tiny data: the option's words, and other options of the
# baseline changed beside it ({key: words}, None drops the key) where the option needs them
OVERRIDES: dict[str, dict[str, tuple[list[str], dict[str, list[str] | None]]]] = {
    "params": {"PRESET_OR_CONFIG": (["bert-mini"], {})},
    "pretrain": {
        "--corpus": (["{d}/corpus2.txt"], {}),
        "--preset": (["mini"], {}),
        "--tokenizer": (["{d}/tokenizer2.json"], {"--vocab-size": None}),
        "--vocab-size": (["200"], {}),
        "--objective": (["mlm"], {}),
        "--masking": (["dynamic"], {}),
        "--ngram": (["3"], {}),
        "--init-embeddings": (["{d}/pieces.txt"], {}),
        "--init": (["{d}/pretrained"], {"--preset": None, "--vocab-size": None}),
        "--eval-every": (["1"], {}),
        "--eval-batches": (["1"], {}),
        "--keep-checkpoints": (["1"], {}),
        "--log-every": (["1"], {}),
        "--stop-at": (["1"], {}),
        "--precision": (["bf16"], {}),
        "--max-predictions": (["2"], {}),
        "--mlm-probability": (["0.4"], {}),
    },
    "pretrain --init": {"--extend-vocab": (["20"], {})},
    "pretrain --family xlnet": {"--reuse-len": (["8"], {})},
    "predict --data": {
        "--text-column": (["package"], {}),
        "--pair-column": (["package"], {}),
        "--label-column": (["label2"], {}),
    },
    "distill --target sentence": {"--preset": (["mini"], {}), "--tokenizer": (["{d}/tokenizer2.json"], {})},
    "finetune --method prompt": {
        "--template": (["{{text}} so [MASK]."], {}),
        "--verbalizer": (["{d}/verbalizer.json"], {}),
    },
    "finetune --grid": {"--seeds": (["1"], {}), "--test": (["{d}/train2.tsv"], {})},
    "export --format sentence-transformers": {"--max-length": (["8"], {})},
    "wordvec train --graph": {"--sampler": (["alias"], {}), "--walk": (["deepwalk"], {"--p": None})},
    "distill": {
        "--teacher": (["{d}/pretrained2"], {}),
        "--corpus": (["{d}/corpus2.txt"], {}),
        "--student": (["bert"], {}),
        "--layers": (["1"], {}),
        "--depth": (["2"], {}),
        "--eval-every": (["1"], {}),
        "--eval-batches": (["1"], {}),
        "--keep-checkpoints": (["1"], {}),
        "--log-every": (["1"], {}),
        "--stop-at": (["1"], {}),
        "--precision": (["bf16"], {}),
        "--mlm-probability": (["0.4"], {}),
    },
    "finetune": {
        "--model": (["{d}/pretrained2"], {}),
        "--task": (["pair"], {"--pair-column": ["package"]}),
        "--train": (["{d}/train2.tsv"], {}),
        "--dev": (["{d}/train2.tsv"], {}),  # dev2.tsv has dev.tsv's label counts: a weak model scores both alike
        "--tokenizer": (["{d}/tokenizer2.json"], {}),
        "--patience": (["1"], {"--epochs": ["4"]}),
        "--log-every": (["1"], {}),
        "--keep-checkpoints": (["2"], {}),
        "--stop-at": (["1"], {}),
        "--precision": (["bf16"], {}),
        "--labels-per-class": (["1"], {}),
        "--text-column": (["package"], {}),
        "--pair-column": (["package"], {}),
        "--label-column": (["label2"], {}),
    },
    "evaluate": {
        "--model": (["{d}/finetuned2"], {}),
        "--data": (["{d}/train.tsv"], {}),
        "--text-column": (["package"], {}),
        "--pair-column": (["package"], {}),
        "--label-column": (["label2"], {}),
    },
    "predict": {
        "--model": (["{d}/finetuned2"], {}),
        "TEXT": (["a web browser"], {}),
        "--pair": (["for the desktop"], {}),
        "--data": (["{d}/dev.tsv"], {"TEXT": None}),
    },
    "baseline": {
        "TRAIN": (["{d}/train2.tsv"], {}),
        "FILE": (["{d}/train.tsv"], {}),
        "--text-column": (["package"], {}),
        "--pair-column": (["package"], {}),
        "--label-column": (["label2"], {}),
        "--l2": (["1"], {}),
    },
    "attention": {
        "--model": (["{d}/pretrained2"], {}),
        "--tokenizer": (["{d}/tokenizer2.json"], {}),
        "--text": (["a dog"], {}),
        "--pair": (["a cat"], {}),
        "--layer": (["0"], {}),
        "--head": (["0"], {}),
        "--out": (["{o}/attention.html"], {}),
    },
    "tokenizer train": {
        "FILE": (["{d}/corpus2.txt"], {}),
        "--vocab-size": (["200"], {}),
        "--algorithm": (["bpe"], {}),
        "--family": (["roberta"], {}),
        "--special-tokens": (["[PAD],[UNK],[CLS],[SEP],[MASK],[X]"], {}),
        "--criterion": (["frequency"], {}),
        "--text-column": (["body"], {"FILE": ["{d}/corpus.jsonl"]}),
        "--replace-errors": ([], {"FILE": ["{d}/latin1.txt"]}),
        "--min-frequency": (["5"], {}),
    },
    "tokenizer encode": {
        "--tokenizer": (["{d}/tokenizer2.json"], {}),
        "text": (["a dog"], {}),
        "--pair": (["a cat"], {}),
    },
    "export": {
        "DIR": (["{d}/finetuned2"], {}),
        "--tokenizer": (["{d}/tokenizer2"], {}),
        "--opset": (["18"], {}),
    },
    "wordvec train": {
        "FILE": (["{d}/corpus2.txt"], {}),
        "--algorithm": (["skipgram"], {}),
        "--window": (["2"], {}),
        "--min-count": (["3"], {}),
        "--max-vocab-size": (["50"], {}),
        "--text-column": (["body"], {"FILE": ["{d}/corpus.jsonl"]}),
        "--tokenizer": (["{d}/tokenizer.json"], {}),
        "--items": ([], {"FILE": ["{d}/items.txt"]}),
        "--graph": ([], {"FILE": ["{d}/edges.txt"]}),
        "--negative": (["2"], {}),
        "--sample": (["0.0001"], {}),
    },
    "wordvec eval": {
        "VECTORS": (["{d}/vectors2.txt"], {}),
        "--analogies": (["{d}/analogies2.txt"], {}),
        "--pairs": (["{d}/pairs2.tsv"], {}),
        "--restrict-vocab": (["20"], {}),
    },
    "wordvec similar": {
        "VECTORS": (["{d}/vectors2.txt"], {}),
        "WORD": (["of"], {}),
        "--negative": (["of"], {}),
        "--topn": (["3"], {}),
    },
    "wordvec plot": {
        "VECTORS": (["{d}/vectors2.txt"], {}),
        "--pairs": (["the:and,of:in"], {}),
    },
}


def _command(run: str) -> str:
    """The command of a run of RUNS: its name, or the name's start ("pretrain --objective rtd": pretrain)."""
    return next(c for c in sorted(PARSERS, key=len, reverse=True) if run == c or run.startswith(c + " "))


def _read(run: str) -> list[str]:
    """The options the run's modes read, as tests/test_option_modes.py declares them."""
    modes, command = RUNS[run][0], _command(run)
    return [
        flag
        for flag, declared in DECLARED[command].items()
        if declared is EVERY or not any(mode in only.unread_in for only in declared for mode in modes)
    ]


def _number(action: argparse.Action, current: str | None):
    value = action.default if current is None else action.type(current)
    if value is None:
        return 2 if action.type is int else 0.5
    if action.type is int:
        return value + 1
    return value * 2 if value else 0.5


def _variant(run: str, flag: str) -> dict[str, list[str]]:
    """The run's words with `flag` at another valid value (OVERRIDES, or generated from its action)."""
    words, command = dict(RUNS[run][1]), _command(run)
    overrides = {**OVERRIDES.get(command, {}), **OVERRIDES.get(run, {})}
    if flag in overrides:
        given, beside = overrides[flag]
        for key, value in beside.items():
            if value is None:
                words.pop(key, None)
            else:
                words[key] = value
        words[flag] = given
        return words
    action = _options(PARSERS[command])[flag]
    current = words.get(flag)
    if action.nargs == 0:  # a switch: flipped
        if current is None:
            words[flag] = []
        else:
            del words[flag]
    elif action.choices:
        now = current[0] if current else action.default
        words[flag] = [next(str(c) for c in action.choices if c != now and c is not None)]
    elif action.type in (int, float):
        words[flag] = [str(_number(action, current[0] if current else None))]
    else:
        raise AssertionError(f"bertology {command} {flag}: say in OVERRIDES which other value to give it")
    return words


def _argv(command: str, words: dict[str, list[str]], d: Path, o: Path) -> list[str]:
    line = command.split()
    for key, value in sorted(words.items(), key=lambda kv: kv[0].startswith("-")):  # positionals first
        line += ([key] if key.startswith("-") else []) + [w.format(d=d, o=o) for w in value]
    return line


TIMING = re.compile(r"seconds|time|started|date|elapsed|duration|_per_s|outside_forward")
SPEEDS = (  # wall-time figures on stdout
    r"[\d,.]+ tokens/s \(\d+% of the time outside forward/backward\)",
    r"[\d,.]+ words/s",
    r"in [\d.]+ s\b",
    r"in [\d.]+s ->",
    r"run at [\d.]+× fp32's speed",
)
RECORDS = {"options.json", ".bertology-run.json"}  # the options as given, and the directory's claim


def _plain_json(value):
    if isinstance(value, dict):
        return {k: _plain_json(v) for k, v in value.items() if k != "options" and not TIMING.search(k)}
    if isinstance(value, list):
        return [_plain_json(v) for v in value]
    return value


def _digest(path: Path, o: Path) -> str:
    data = path.read_bytes()
    if path.suffix in (".json", ".jsonl"):
        text = data.decode("utf-8").replace(str(o), "<OUT>")
        try:
            lines = [json.loads(text)] if path.suffix == ".json" else [json.loads(x) for x in text.splitlines()]
            data = json.dumps([_plain_json(x) for x in lines], sort_keys=True).encode()
        except json.JSONDecodeError:
            data = text.encode()
    elif path.suffix == ".safetensors":  # the tensors (the file's bytes may order them differently)
        from safetensors.numpy import load_file

        digest = hashlib.sha256()
        for name, array in sorted(load_file(str(path)).items()):
            digest.update(name.encode() + str(array.dtype).encode() + str(array.shape).encode() + array.tobytes())
        return digest.hexdigest()[:16]
    elif path.name.startswith("events.out.tfevents"):  # TensorBoard's: named by host and time
        return "events"
    elif path.name == "trainer_state.pt":  # optimizer and RNG state, with wall times: the weights beside it say it
        return "state"
    return hashlib.sha256(data).hexdigest()[:16]


def _observe(status: int, out: str, o: Path) -> dict[str, str]:
    """What the user sees: the exit status, stdout (this run's directory and throughput masked), each file."""
    out = out.replace(str(o), "<OUT>")
    for speed in SPEEDS:
        out = re.sub(speed, "<SPEED>", out)
    seen = {"<status>": str(status), "<stdout>": out}
    if o.is_dir():
        for p in sorted(o.rglob("*")):
            rel = p.relative_to(o).as_posix()
            if p.is_file() and p.name not in RECORDS and not rel.startswith("cache/"):
                name = re.sub(r"events\.out\.tfevents\..*", "events.out.tfevents", rel)
                seen[name] = _digest(p, o)
    return seen


def _run(command: str, words: dict[str, list[str]], d: Path, o: Path, capsys) -> tuple[dict[str, str], str]:
    o.mkdir(parents=True)
    argv = _argv(command, words, d, o)
    if command in ("pretrain", "distill", "finetune"):
        o.rmdir()  # the job claims --out itself
    capsys.readouterr()
    status = main(argv)
    said = capsys.readouterr()
    assert status in (0, 130), f"bertology {' '.join(argv)}: exit {status}: {said.err[-600:]}"
    return _observe(status, said.out, o), said.err


def _write_inputs(d: Path) -> None:
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    lines = [line for line in text[:60_000].splitlines() if line.strip()]
    lines = [f"{a} {b}" for a, b in zip(lines[0::2], lines[1::2])]  # two sentences a line: --format raw splits them
    for name, part in (("corpus.txt", lines[:120]), ("corpus2.txt", lines[120:240])):
        docs = ["\n".join(part[i : i + 10]) for i in range(0, len(part), 10)]
        (d / name).write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    (d / "corpus.jsonl").write_text(
        "".join(json.dumps({"text": a, "body": b}) + "\n" for a, b in zip(lines[:60], lines[60:120])),
        encoding="utf-8",
    )
    (d / "latin1.txt").write_bytes("caf\xe9 na\xefve r\xe9sum\xe9\n".encode("latin-1") * 20 + b"plain words\n" * 20)
    (d / "squad_v1.json").write_bytes((ROOT / "tests" / "tasks" / "fixtures" / "squad_v1.json").read_bytes())
    rows = (ROOT / "data" / "debian-sections" / "train.tsv").read_text(encoding="utf-8").splitlines()
    head = rows[0]
    for name, part in (
        ("train.tsv", rows[1::60]),
        ("train2.tsv", rows[3::60]),
        ("dev.tsv", rows[2::120]),
        ("dev2.tsv", rows[4::120]),
        ("train-big.tsv", rows[5::12]),
    ):
        labels = [row.split("\t")[2] for row in reversed(part)]  # label2: the labels in reverse order
        (d / name).write_text(
            "\n".join([head + "\tlabel2", *(f"{r}\t{x}" for r, x in zip(part, labels))]) + "\n", encoding="utf-8"
        )
    words = sorted({w for line in lines[:120] for w in line.lower().split() if w.isalpha()})
    (d / "items.txt").write_text("\n".join(" ".join(words[i : i + 5]) for i in range(0, 200, 5)) + "\n")
    (d / "edges.txt").write_text("\n".join(f"{words[i]} {words[(i * 7 + 3) % 60]}" for i in range(60)) + "\n")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Shared inputs: corpora, labelled files, a tokenizer, two tiny pretrained and fine-tuned models, vectors."""
    d = tmp_path_factory.mktemp("option-effects")
    _write_inputs(d)
    tiny = ["--batch-size", "4", "--max-length", "32", "--steps", "2", "--heldout", "2", "--dupe-factor", "1"]
    for name, seed in (("pretrained", "0"), ("pretrained2", "1")):
        assert main(["pretrain", "--family", "bert", "--preset", "tiny", "--corpus", str(d / "corpus.txt"),
                     "--out", str(d / name), "--vocab-size", "300", "--seed", seed, "--quiet", *tiny]) == 0  # fmt: skip
    for name, model in (("finetuned", "pretrained"), ("finetuned2", "pretrained2")):
        assert main(["finetune", "--model", str(d / model), "--task", "classify", "--train", str(d / "train.tsv"),
                     "--out", str(d / name), "--epochs", "8", "--lr", "1e-3", "--batch-size", "8",
                     "--max-length", "32", "--quiet"]) == 0  # fmt: skip
    (d / "tokenizer.json").write_bytes((d / "pretrained" / "tokenizer.json").read_bytes())
    assert main(["tokenizer", "train", str(d / "corpus2.txt"), "--out", str(d / "tokenizer2"),
                 "--vocab-size", "250", "--quiet"]) == 0  # fmt: skip
    (d / "tokenizer2.json").write_bytes((d / "tokenizer2" / "tokenizer.json").read_bytes())
    for name, seed in (("vectors.txt", "1"), ("vectors2.txt", "2")):
        assert main(["wordvec", "train", str(d / "corpus.txt"), "--out", str(d / name), "--vector-size", "8",
                     "--min-count", "1", "--epochs", "1", "--workers", "1", "--seed", seed, "--quiet"]) == 0  # fmt: skip
    assert main(["wordvec", "train", str(d / "corpus.txt"), "--tokenizer", str(d / "tokenizer.json"), "--out",
                 str(d / "pieces.txt"), "--vector-size", "128", "--min-count", "1", "--epochs", "1", "--workers", "1",
                 "--quiet"]) == 0  # fmt: skip
    labels = sorted({row.split("\t")[2] for row in (d / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]})
    rotated = {label: [labels[(i + 1) % len(labels)]] for i, label in enumerate(labels)}  # another label's name
    (d / "verbalizer.json").write_text(json.dumps(rotated), encoding="utf-8")
    vocab = [line.split()[0] for line in (d / "vectors.txt").read_text(encoding="utf-8").splitlines()[1:]]
    (d / "analogies.txt").write_text(
        ": one\n" + "".join(" ".join(vocab[i : i + 4]) + "\n" for i in range(0, 40, 4)), encoding="utf-8"
    )
    (d / "analogies2.txt").write_text(
        ": two\n" + "".join(" ".join(vocab[i : i + 4]) + "\n" for i in range(40, 80, 4)), encoding="utf-8"
    )
    for name, start in (("pairs.tsv", 0), ("pairs2.tsv", 30)):
        pairs = [f"{vocab[i]}\t{vocab[i + 1]}\t{(i * 37) % 10}" for i in range(start, start + 30)]
        (d / name).write_text("\n".join(pairs) + "\n", encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def baselines(inputs, tmp_path_factory):
    """Each command's baseline, run when first asked for (and its seen files kept)."""
    made: dict[str, dict[str, str]] = {}

    def get(run: str, capsys) -> dict[str, str]:
        if run not in made:
            o = tmp_path_factory.mktemp("baseline") / "out"
            made[run] = _run(_command(run), RUNS[run][1], inputs, o, capsys)[0]
        return made[run]

    return get


def _in(table: dict[str, dict], run: str) -> dict:
    return {**table.get(_command(run), {}), **table.get(run, {})}


def _new(run: str) -> list[str]:
    """The options a run reads that its command's first run (the run named as the command) does not test."""
    command = _command(run)
    if run == command:
        return _read(run)
    tested = [f for f in _read(command) if f not in _in(EXEMPT, command) and f not in _in(REFUSED, command)]
    return [f for f in _read(run) if f not in tested]


def _cases():
    for run in RUNS:
        for flag in _new(run):
            if flag not in _in(EXEMPT, run) and flag not in _in(REFUSED, run):
                found = _in(FINDINGS, run).get(flag)
                marks = [pytest.mark.xfail(strict=True, reason=found)] if found else []
                yield pytest.param(run, flag, id=f"{run} {flag}", marks=marks)


def test_every_command_is_run_or_said_why_not():
    assert {_command(run) for run in RUNS} | set(NOT_RUN) == set(PARSERS)
    assert not set(RUNS) & set(NOT_RUN) and set(NOT_RUN) <= set(PARSERS)


def test_exemptions_and_overrides_name_options_the_run_reads():
    """So that no list rots: an option renamed, removed or no longer read by the runs' modes fails."""
    for table in (EXEMPT, OVERRIDES, REFUSED, FINDINGS):
        for key, flags in table.items():
            assert key in RUNS, f"{key!r}: not a run"
            runs = [r for r in RUNS if r == key or (key == _command(r) and key in PARSERS)]
            stale = set(flags) - {f for r in runs for f in _read(r)}
            assert not stale, f"bertology {key}: {sorted(stale)} are not options its runs' modes read"
    for command, flags in UNRUN.items():
        read = {f for r in RUNS if _command(r) == command for f in _read(r)}
        assert set(flags) <= set(_options(PARSERS[command])), f"bertology {command}: {sorted(flags)}"
        assert not set(flags) & read, f"bertology {command}: {sorted(set(flags) & read)} are read by a run here"
    for run, (modes, words) in RUNS.items():
        assert set(words) <= set(_options(PARSERS[_command(run)])), run
        assert not set(modes) - set(MODES.get(_command(run), {})), run


def test_every_option_of_a_run_command_is_tried_exempt_refused_or_unrun():
    tried: dict[str, set[str]] = {}
    for case in _cases():
        run, flag = case.values
        tried.setdefault(_command(run), set()).add(flag)
    for table in (EXEMPT, REFUSED, UNRUN):
        for key, flags in table.items():
            tried.setdefault(_command(key), set()).update(flags)
    for command in {_command(run) for run in RUNS}:
        left = set(DECLARED[command]) - tried[command]
        assert not left, f"bertology {command}: {sorted(left)} are not tried by any run here (nor said why)"


@pytest.mark.parametrize("run", list(RUNS))
def test_the_baseline_is_the_same_twice(inputs, baselines, tmp_path, capsys, run):
    """The control: without it every variant would differ by chance."""
    again, _ = _run(_command(run), RUNS[run][1], inputs, tmp_path / "out", capsys)
    first = baselines(run, capsys)
    assert {k: v for k, v in again.items() if first.get(k) != v} == {}, f"bertology {run} is not deterministic"


@pytest.mark.parametrize("run, flag", list(_cases()))
def test_an_option_its_mode_reads_changes_what_the_user_sees(inputs, baselines, tmp_path, capsys, run, flag):
    base, command = baselines(run, capsys), _command(run)
    seen, err = _run(command, _variant(run, flag), inputs, tmp_path / "out", capsys)
    argv = _argv(command, _variant(run, flag), inputs, tmp_path / "out")
    assert seen != base, f"bertology {' '.join(argv)}: {flag} changed nothing a user sees (stderr: {err[-300:]!r})"


@pytest.mark.parametrize(
    "command, flag",
    [pytest.param(command, flag, id=f"{command} {flag}") for command, flags in REFUSED.items() for flag in flags],
)
def test_an_option_declared_read_but_refused_says_so(inputs, tmp_path, capsys, command, flag):
    given, said = REFUSED[command][flag]
    argv = _argv(_command(command), {**RUNS[command][1], flag: given}, inputs, tmp_path / "out")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and flag.lstrip("-") in err, err
    assert not (tmp_path / "out").exists(), "written before the refusal"
