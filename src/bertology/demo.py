"""`bertology demo`: does pretraining pay? BERT, RoBERTa, ALBERT and XLNet each pretrained on
unlabelled text in the task's own domain, then fine-tuned on data/debian-sections against their
random-init twins, on the data that ships here.

1. trains each family's tokenizer (WordPiece, byte-level BPE, Unigram for ALBERT and XLNet) on
   Debian's long package descriptions (data/debian-descriptions: leakage-free for the task's dev
   and test packages);
2. pretrains a tiny model of each family on the same token budget with the small-budget recipe
   (`recipe`: short sequences, 30% of the tokens predicted, no dropout, a unigram prior on the MLM
   output bias), each with its paper's objective (BERT MLM + NSP, RoBERTa MLM with dynamic masks
   over full sentences, ALBERT MLM + SOP with n-gram masks, factorized embeddings and one shared
   layer, XLNet's permutation LM over two streams with memory carried from step to step);
3. fine-tunes each pretrained model and its random-init twin (same architecture and tokenizer)
   with the same learning-rate grid × seeds (tasks.grid: the rate chosen on mean dev accuracy),
   and scores the test split as mean ± standard deviation, next to a bag-of-words baseline;
4. distils the pretrained BERT into a DistilBERT of half its depth (train/distill.py: the triple
   loss from its layers), fine-tunes it the same way, and measures its inference speed against
   the teacher's;
5. prints the tables and writes runs/demo/report.md (tables, curves, bars, parameter breakdown,
   attention maps) and runs/demo/results.json (one object per model, for scripts).

`--quick` is a smoke test (< 2 minutes); `--budget-minutes N` scales the pretraining; Ctrl-C
checkpoints, and `--resume` continues where the run stopped.
"""
from __future__ import annotations

import json
import lzma
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .models.family import PRETRAINABLE

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = PRETRAINABLE  # every family that pretrains from scratch: bert, roberta, albert, xlnet
CORPORA = {  # unlabelled pretraining text that ships with the project
    "debian": [ROOT / "data" / "debian-descriptions" / "descriptions.txt.xz"],
    "wiki": [ROOT / "data" / "wiki.txt"],
}
ATTENTION_SENTENCE = "A free real-time strategy game of ancient warfare, with a powerful custom game engine."
# Two rates keep the demo within 15 minutes. bench/finetune.py runs {1e-4, 3e-4, 1e-3, 3e-3}: there 3e-4 wins
# the twin's dev score (test 0.645 ± 0.025, against 0.653 ± 0.042 at 1e-3 here) and 1e-3 the pretrained model's.
LEARNING_RATES = (1e-3, 3e-3)
SEEDS = (0, 1, 2)


@dataclass
class Plan:
    preset: str
    vocab_size: int
    corpus_bytes: int | None  # None = the whole in-domain corpus
    seq_len: int
    batch_size: int
    steps: int
    finetune_epochs: float
    finetune_length: int
    seeds: tuple[int, ...]
    bf16: bool

    @classmethod
    def make(cls, quick: bool, budget_minutes: float, bf16: bool) -> "Plan":
        if quick:
            return cls(preset="tiny", vocab_size=2000, corpus_bytes=400_000, seq_len=32, batch_size=16, steps=24,
                       finetune_epochs=1.0, finetune_length=32, seeds=(0,), bf16=bf16)
        # tiny models, 64 × 32 tokens a step: ~4 M tokens per model at the default budget; fine-tuning
        # long enough (10 epochs, best dev epoch kept) that the random-init twin converges too
        return cls(preset="tiny", vocab_size=8000, corpus_bytes=None, seq_len=32, batch_size=64,
                   steps=max(60, round(2000 * budget_minutes / 10)), finetune_epochs=10.0, finetune_length=48,
                   seeds=SEEDS, bf16=bf16)

    @property
    def tokens(self) -> int:
        return self.steps * self.batch_size * self.seq_len


def recipe(family: str, corpus: list[str], tokenizer: str, out_dir: str, steps: int, bf16: bool, *,
           batch_size: int = 64, seq_len: int = 32, preset: str = "tiny", quiet: bool = False):
    """The small-budget pretraining recipe (measured in bench/pretraining_pays.py; see the README).

    Against BERT's own recipe at the same token budget, on the Debian corpus: sequences of 32
    tokens instead of 64 to 128 (a tiny model learns local context first), 30% of the tokens
    masked instead of 15% (twice the predictions per token read), no dropout while pretraining
    (the saved config keeps 0.1 for fine-tuning), and the MLM output bias started at the corpus's
    log unigram distribution (without it the tied embeddings learn word frequencies along one
    shared direction and fine-tune worse than random ones). The family's objective, packing and
    masking style are its paper's; XLNet predicts the same 30% (its `num_predict`) by permutation
    LM, the rest of its recipe (reuse half, memory 3/4 of the sequence) scaled from the original's.
    """
    from .train.pretrain import PretrainOptions

    predictions = max(1, round(0.3 * seq_len))
    objective = (dict(num_predict=predictions) if family == "xlnet" else
                 dict(mlm_probability=0.3, max_predictions=predictions, dupe_factor=2))
    return PretrainOptions(
        family=family, corpus=[str(c) for c in corpus], out_dir=out_dir, preset=preset, tokenizer=tokenizer, steps=steps,
        batch_size=batch_size, seq_len=seq_len, lr=2e-3, warmup=max(2, steps // 10), schedule="linear", dropout=0.0,
        unigram_prior=True, bf16=bf16, heldout=0.02, eval_every=max(1, steps // 5), log_every=max(1, steps // 40),
        quiet=quiet, **objective,
    )


def data_path(*parts: str) -> Path:
    path = ROOT.joinpath("data", *parts)
    if not path.exists():
        raise FileNotFoundError(f"{path}: the demo's data ships with the project; is this a full checkout?")
    return path


def corpus_files(out: Path, max_bytes: int | None) -> list[Path]:
    """The in-domain corpus, whole (read compressed) or its first `max_bytes` cut at a document boundary."""
    source = CORPORA["debian"][0]
    if not source.is_file():
        raise FileNotFoundError(f"{source}: the demo's corpus ships with the project; is this a full checkout?")
    if max_bytes is None:
        return [source]
    with lzma.open(source, "rt", encoding="utf-8") as f:
        text = f.read(max_bytes)
    head = out / "corpus" / "debian-head.txt"
    head.parent.mkdir(parents=True, exist_ok=True)
    head.write_text(text[:text.rindex("\n\n") + 1], encoding="utf-8")
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


def say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, flush=True)


def fine_tune_grid(model: Path, run_dir: Path, plan: Plan, resume: bool, from_scratch: bool = False) -> dict:
    """One starting point through the learning-rate grid × seeds (reused on --resume when finished)."""
    from .tasks.finetune import FinetuneOptions
    from .tasks.grid import finetune_grid

    done = run_dir / "grid.json"
    t0 = time.perf_counter()
    reused = resume and done.is_file()
    if not reused:
        shutil.rmtree(run_dir, ignore_errors=True)  # a grid restarts from its beginning
        options = FinetuneOptions(
            model=str(model), from_scratch=from_scratch, task="classify",
            train=str(data_path("debian-sections", "train.tsv")), dev=str(data_path("debian-sections", "dev.tsv")),
            out_dir=str(run_dir), epochs=plan.finetune_epochs, batch_size=32, max_length=plan.finetune_length,
            bf16=plan.bf16, quiet=True)
        finetune_grid(options, str(data_path("debian-sections", "test.tsv")), LEARNING_RATES, plan.seeds)
    return {**json.loads(done.read_text()), "seconds": stage_seconds(run_dir, time.perf_counter() - t0, reused)}


def fine_tune_both(family: str, out: Path, plan: Plan, resume: bool, quiet: bool) -> dict:
    """The pretrained model and its random-init twin through the same grid; test mean ± std of each."""
    scores = {}
    for start, from_scratch in (("pretrained", False), ("random_init", True)):
        grid = fine_tune_grid(out / "pretrain" / family, out / "finetune" / family / start, plan, resume, from_scratch)
        scores[start] = grid
        say(f"   {family:<8} {start.replace('_', ' '):<12} lr {grid['lr']:g}: test accuracy {grid['test_mean']:.3f} "
            f"± {grid['test_std']:.3f} over {len(plan.seeds)} seed(s)", quiet)
    return scores


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


def distill_bert(out: Path, plan: Plan, corpus: list[Path], resume: bool, quiet: bool) -> dict | None:
    """Stage 4: the pretrained BERT distilled to half its depth (DistilBERT's recipe at the demo's
    scale), fine-tuned through the same grid; None when interrupted (checkpointed)."""
    from . import load
    from .tokenizers import Tokenizer
    from .train.distill import DistillOptions, distill

    teacher_dir, run_dir = out / "pretrain" / "bert", out / "distill" / "bert"
    t0 = time.perf_counter()
    reused = resume and (run_dir / "summary.json").is_file() and (run_dir / "model.safetensors").is_file()
    if reused:
        summary = json.loads((run_dir / "summary.json").read_text())
    else:
        continue_run = resume and (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
        if not continue_run:
            shutil.rmtree(run_dir, ignore_errors=True)
        options = DistillOptions(
            teacher=str(teacher_dir), corpus=[str(c) for c in corpus], out_dir=str(run_dir), steps=max(2, plan.steps // 2),
            batch_size=plan.batch_size, seq_len=plan.seq_len, lr=2e-3, warmup=max(1, plan.steps // 20), dropout=0.0,
            mlm_probability=0.3, heldout=3 if plan.corpus_bytes else 0.02, bf16=plan.bf16,
            eval_every=max(1, plan.steps // 2), log_every=max(1, plan.steps // 40), quiet=quiet)
        summary = distill(options, resume=continue_run)
        if summary["interrupted"]:
            return None
    seconds = stage_seconds(run_dir, time.perf_counter() - t0, reused)
    grid = fine_tune_grid(run_dir, out / "finetune" / "distilbert" / "distilled", plan, resume)
    measured = run_dir / "demo_speedup.json"  # measured once, so that a resumed demo reports the same
    if reused and measured.is_file():
        speedup = json.loads(measured.read_text())["speedup"]
    else:
        tokenizer = Tokenizer.load(teacher_dir / "tokenizer.json")
        texts = task_texts("dev")[:64]
        speedup = (inference_seconds(load(teacher_dir), tokenizer, texts, plan.finetune_length)
                   / inference_seconds(load(run_dir), tokenizer, texts, plan.finetune_length))
        measured.write_text(json.dumps({"speedup": speedup}) + "\n")
    row = {"parameters": summary["parameters"], "teacher_parameters": summary["teacher_parameters"],
           "distill_s": seconds, "speedup": speedup, "finetune": grid,
           "mlm_accuracy": summary["eval"].get("eval/mlm_accuracy", float("nan")),
           "teacher_agreement": summary["eval"].get("eval/teacher_agreement", float("nan"))}
    say(f"   distilbert {summary['parameters']:,} parameters (teacher {summary['teacher_parameters']:,}), "
        f"{speedup:.2f}× the teacher's inference speed, held-out agreement with the teacher "
        f"{row['teacher_agreement']:.3f}; fine-tuned: lr {grid['lr']:g}, test accuracy {grid['test_mean']:.3f} "
        f"± {grid['test_std']:.3f}", quiet)
    return row


def train_tokenizers(out: Path, plan: Plan, corpus: list[Path], resume: bool, quiet: bool) -> dict[str, dict]:
    """Stage 1: each family's tokenizer on the in-domain corpus (kept on --resume)."""
    from .models import get_family
    from .tokenizers import Tokenizer, train

    say("\n1/5 tokenizers, trained on data/debian-descriptions", quiet)
    dev_texts = task_texts("dev")
    rows = {}
    for family in FAMILIES:
        path = out / "tokenizers" / family / "tokenizer.json"
        algorithm = get_family(family).tokenizer_algorithm
        t0 = time.perf_counter()
        if not (resume and path.is_file()):
            # WordPiece by frequency, as Hugging Face's trainer and Google's vocabularies behave: the
            # likelihood criterion (bertology's default) needs ~2x the tokens per word at these sizes.
            extra = {"criterion": "frequency"} if family == "bert" else {}
            train([str(c) for c in corpus], family=get_family(family).tokenizer, vocab_size=plan.vocab_size,
                  show_progress=False, **extra).save(path)
        tok = Tokenizer.load(path)
        rows[family] = {"tokenizer": algorithm, "vocab": tok.vocab_size, "tokens_per_word": tokens_per_word(tok, dev_texts)}
        say(f"   {family:<8} {algorithm:<15} vocab {tok.vocab_size:>6,}  {rows[family]['tokens_per_word']:.3f} tokens/word "
            f"on the task's dev texts ({time.perf_counter() - t0:.1f} s)", quiet)
    return rows


def pretrain_one(family: str, out: Path, plan: Plan, corpus: list[Path], resume: bool, quiet: bool) -> dict | None:
    """Stage 2 for one family: its row of pretraining numbers, or None when interrupted (checkpointed)."""
    from .train.pretrain import pretrain

    run_dir = out / "pretrain" / family
    done = run_dir / "summary.json"
    t0 = time.perf_counter()
    reused = resume and done.is_file() and (run_dir / "model.safetensors").is_file()
    if reused:
        summary = json.loads(done.read_text())
    else:
        options = recipe(family, corpus, str(out / "tokenizers" / family / "tokenizer.json"), str(run_dir), plan.steps,
                         plan.bf16, batch_size=plan.batch_size, seq_len=plan.seq_len, preset=plan.preset, quiet=quiet)
        if plan.corpus_bytes:
            options.heldout = 3
        continue_run = resume and (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
        if not continue_run:
            shutil.rmtree(run_dir, ignore_errors=True)  # the demo's own stage directory: start it afresh
        summary = pretrain(options, resume=continue_run)
        if summary["interrupted"]:
            return None
    evaluation = summary["eval"]
    row = dict(
        parameters=summary["parameters"], tokens_per_s=summary["final"].get("tokens_per_s", float("nan")),
        mlm_accuracy=evaluation.get("eval/mlm_accuracy", evaluation.get("eval/plm_accuracy", float("nan"))),
        unigram_accuracy=evaluation.get("eval/unigram_accuracy", float("nan")),
        pair_accuracy=evaluation.get("eval/pair_accuracy"), objective=summary["objective"],
        pretrain_s=stage_seconds(run_dir, time.perf_counter() - t0, reused),
        pretraining_tokens=summary["steps"] * plan.batch_size * plan.seq_len,
    )
    say(f"   {family:<8} {summary['objective']:<8} {summary['parameters']:>10,} parameters  "
        f"{row['tokens_per_s']:>7,.0f} tokens/s  held-out {'PLM' if family == 'xlnet' else 'MLM'} accuracy "
        f"{row['mlm_accuracy']:.3f} "
        f"(unigram {row['unigram_accuracy']:.3f})"
        + (f"  pair accuracy {row['pair_accuracy']:.3f}" if row["pair_accuracy"] is not None else ""), quiet)
    return row


def baseline_accuracy(quiet: bool) -> float:
    """The bag-of-words logistic regression every model has to beat."""
    from .tasks.baseline import BagOfWordsBaseline
    from .tasks.classification import ClassifyTask

    task = ClassifyTask()
    baseline = BagOfWordsBaseline().fit(task.read(str(data_path("debian-sections", "train.tsv"))))
    accuracy = baseline.score(task.read(str(data_path("debian-sections", "test.tsv"))))["accuracy"]
    say(f"   {'baseline':<8} bag-of-words logistic regression: test accuracy {accuracy:.3f}", quiet)
    return accuracy


def claim_demo_dir(out: Path, resume: bool, overwrite: bool) -> None:
    """The demo writes only into a directory of its own: a fresh run clears the stages an earlier
    demo wrote there; a directory of the user's is refused (or, with --overwrite, written into
    without deleting anything)."""
    from .io import RUN_MARKER, atomic_write_json, claim_output_dir

    report = out / "report.md"
    earlier = report.is_file() and report.read_text(encoding="utf-8").startswith("# bertology demo report")
    if earlier and not (out / RUN_MARKER).is_file():  # a demo from before output directories were marked
        atomic_write_json(out / RUN_MARKER, {"command": "demo"})
    ours = (out / RUN_MARKER).is_file()
    claim_output_dir(out, "demo", resume=resume and ours, overwrite=overwrite or ours)
    if ours and not resume:
        for stage in ("tokenizers", "pretrain", "finetune", "distill", "corpus"):
            shutil.rmtree(out / stage, ignore_errors=True)


def run(args) -> int:
    from .hardware import cpu_summary, precision_probe, precision_reason
    from .models.params import count

    out = Path(args.out)
    quiet = args.quiet
    claim_demo_dir(out, args.resume, args.overwrite)
    plan = Plan.make(args.quick, args.budget_minutes, bf16=not args.fp32 and bool(precision_probe()["bf16_pays"]))
    say(f"bertology demo → {out}  ({'quick' if args.quick else f'budget {args.budget_minutes:g} min'}: "
        f"{plan.preset} models, {plan.steps} steps × {plan.batch_size} × {plan.seq_len} tokens each, "
        f"{'bf16' if plan.bf16 else 'fp32'})\n   {cpu_summary()}\n   precision: "
        f"{'fp32 (--fp32)' if args.fp32 else precision_reason()}", quiet)
    started = time.perf_counter()
    corpus = corpus_files(out, plan.corpus_bytes)
    rows = train_tokenizers(out, plan, corpus, args.resume, quiet)

    say(f"\n2/5 pretraining, {plan.tokens:,} tokens each", quiet)
    for family in FAMILIES:
        row = pretrain_one(family, out, plan, corpus, args.resume, quiet)
        if row is None:
            print(f"interrupted during {family} pretraining; continue with: bertology demo --resume"
                  + (" --quick" if args.quick else "") + (f" --out {out}" if str(out) != "runs/demo" else ""))
            return 130
        rows[family].update(row)

    say(f"\n3/5 fine-tuning on data/debian-sections (description → section), pretrained vs random init: "
        f"lr ∈ {{{', '.join(f'{x:g}' for x in LEARNING_RATES)}}} chosen on dev, {len(plan.seeds)} seed(s)", quiet)
    for family in FAMILIES:
        rows[family]["finetune"] = fine_tune_both(family, out, plan, args.resume, quiet)
    baseline = baseline_accuracy(quiet)

    say("\n4/5 distillation: the BERT above to half its depth (DistilBERT's triple loss), fine-tuned the same way", quiet)
    distilled = distill_bert(out, plan, corpus, args.resume, quiet)
    if distilled is None:
        print("interrupted during distillation; continue with: bertology demo --resume" + (" --quick" if args.quick else "")
              + (f" --out {out}" if str(out) != "runs/demo" else ""))
        return 130

    say("\n5/5 report", quiet)
    report = write_report(out, plan, rows, baseline, time.perf_counter() - started, count, distilled)
    print("\n" + report["table"])
    print(f"\nreport: {report['path']} (+ {len(report['images'])} plots); results: {out / 'results.json'}")
    return 0


def results(rows: dict[str, dict]) -> list[dict]:
    """runs/demo/results.json: one object per model (scripts and checks read these names)."""
    out = []
    for family, r in rows.items():
        pre, rand = r["finetune"]["pretrained"], r["finetune"]["random_init"]
        out.append({
            "model": family, "test_accuracy": pre["test_mean"], "test_accuracy_std": pre["test_std"],
            "random_init_test_accuracy": rand["test_mean"], "random_init_test_accuracy_std": rand["test_std"],
            "lr": pre["lr"], "random_init_lr": rand["lr"], "seeds": sorted({run["seed"] for run in pre["runs"]}),
            "pretraining_tokens": r["pretraining_tokens"], "pretraining_seconds": r["pretrain_s"],
            "pretraining_tokens_per_s": r["tokens_per_s"], "mlm_accuracy": r["mlm_accuracy"],
            "unigram_accuracy": r["unigram_accuracy"], "pair_accuracy": r["pair_accuracy"], "parameters": r["parameters"],
            "tokenizer": r["tokenizer"], "vocab_size": r["vocab"], "tokens_per_word": r["tokens_per_word"],
        })
    return out


def table(rows: dict[str, dict], baseline_accuracy: float) -> str:
    header = ("| model | tokenizer (vocab, tokens/word) | parameters | pretraining tokens/s | held-out MLM / PLM acc. (unigram) "
              "| NSP / SOP acc. | Debian test acc., pretrained | random init | gain | wall time |")
    lines = [header, "|" + "---|" * 10]
    for family, r in rows.items():
        pair = f"{r['pair_accuracy']:.3f} ({'NSP' if family == 'bert' else 'SOP'})" if r.get("pair_accuracy") is not None else "–"
        pre, rand = r["finetune"]["pretrained"], r["finetune"]["random_init"]
        wall = r["pretrain_s"] + pre["seconds"] + rand["seconds"]
        lines.append(
            f"| {family} | {r['tokenizer']} ({r['vocab']:,}, {r['tokens_per_word']:.2f}) | {r['parameters']:,} "
            f"| {r['tokens_per_s']:,.0f} | {r['mlm_accuracy']:.3f} ({r['unigram_accuracy']:.3f}) | {pair} "
            f"| {pre['test_mean']:.3f} ± {pre['test_std']:.3f} | {rand['test_mean']:.3f} ± {rand['test_std']:.3f} "
            f"| {pre['test_mean'] - rand['test_mean']:+.3f} | {wall:.0f} s |")
    lines.append(f"| bag-of-words baseline | – | – | – | – | – | {baseline_accuracy:.3f} | – | – | – |")
    return "\n".join(lines)


def distillation_table(rows: dict[str, dict], distilled: dict) -> str:
    teacher, grid = rows["bert"], distilled["finetune"]
    pre = teacher["finetune"]["pretrained"]
    return "\n".join([
        "| model | parameters | inference speed | held-out agreement with the teacher | Debian test acc. |",
        "|---|---|---|---|---|",
        f"| bert (teacher) | {teacher['parameters']:,} | 1.00× | – | {pre['test_mean']:.3f} ± {pre['test_std']:.3f} |",
        f"| distilbert, half depth, distilled from it | {distilled['parameters']:,} | {distilled['speedup']:.2f}× "
        f"| {distilled['teacher_agreement']:.3f} | {grid['test_mean']:.3f} ± {grid['test_std']:.3f} |",
    ])


def write_report(out: Path, plan: Plan, rows: dict, baseline_accuracy: float, wall_s: float, count,
                 distilled: dict) -> dict:
    from . import load
    from .io import atomic_write_text
    from .tokenizers import Tokenizer
    from .viz import write_attention
    from .viz.plots import plot_bars, plot_curves, plot_parameter_breakdown, read_metrics

    grid = distilled["finetune"]
    student = {"model": "distilbert", "teacher": "bert", "test_accuracy": grid["test_mean"],
               "test_accuracy_std": grid["test_std"], "lr": grid["lr"], "parameters": distilled["parameters"],
               "teacher_parameters": distilled["teacher_parameters"], "inference_speedup": distilled["speedup"],
               "teacher_agreement": distilled["teacher_agreement"], "distillation_seconds": distilled["distill_s"]}
    atomic_write_text(out / "results.json", json.dumps(results(rows) + [student], indent=2) + "\n")
    images = []
    runs = {f: read_metrics(out / "pretrain" / f / "metrics.jsonl") for f in rows}
    tokens_per_step = {f: plan.batch_size * plan.seq_len for f in rows}
    images.append(plot_curves(runs, out / "pretraining.png", tokens_per_step))
    accuracies = {**{f: r["finetune"]["pretrained"]["test_mean"] for f, r in rows.items()},
                  **{f"{f} (random init)": r["finetune"]["random_init"]["test_mean"] for f, r in rows.items()},
                  "baseline": baseline_accuracy}
    images.append(plot_bars(accuracies, out / "downstream.png", "test accuracy (mean over seeds)",
                            "Debian sections (10 classes): pretrained vs random init"))
    breakdown = {}
    for family in rows:
        model = load(out / "pretrain" / family)
        c = count(model.config)
        breakdown[family] = {"embeddings": sum(c.embeddings.values()), "encoder": c.encoder, "pooler": c.pooler}
        tok = Tokenizer.load(out / "pretrain" / family / "tokenizer.json")
        tok.no_padding()
        images.append(out / f"attention-{family}.png")
        write_attention(images[-1], model, tok, ATTENTION_SENTENCE)
    images.append(plot_parameter_breakdown(breakdown, out / "parameters.png"))
    text = table(rows, baseline_accuracy) + "\n\nDistillation:\n\n" + distillation_table(rows, distilled)
    body = [
        "# bertology demo report", "",
        f"{plan.preset} models pretrained on data/debian-descriptions, {plan.steps} steps of {plan.batch_size} × "
        f"{plan.seq_len} tokens each ({plan.tokens:,} tokens per model), {'bf16 autocast' if plan.bf16 else 'fp32'}; "
        f"fine-tuned {plan.finetune_epochs:g} epochs on data/debian-sections with lr ∈ "
        f"{{{', '.join(f'{x:g}' for x in LEARNING_RATES)}}} chosen on mean dev accuracy over seeds {list(plan.seeds)}; "
        f"total wall time {wall_s / 60:.1f} min.", "",
        text, "",
        "Tokens/word: on the task's dev texts. MLM accuracy: masked tokens predicted exactly, on held-out documents "
        "(XLNet: its permutation-LM targets, each predicted from the tokens before it in a random factorisation "
        "order); in brackets, always predicting the corpus's most frequent token. NSP / SOP: the pair objective's "
        "held-out accuracy (RoBERTa and XLNet have none). Test accuracy: mean ± standard deviation over the seeds "
        "at the chosen rate; random init: the same architecture and tokenizer without pretraining, through the same grid.", "",
        "![pretraining curves](pretraining.png)", "", "![downstream accuracy](downstream.png)", "",
        "![parameter breakdown](parameters.png)", "",
        *[f"![attention {f}](attention-{f}.png)" for f in rows], "",
    ]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(body))
    return {"table": text, "path": path, "images": images}
