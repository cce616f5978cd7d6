"""`bertology demo`: BERT, RoBERTa and ALBERT compared on equal terms, on the data that ships here.

1. trains each family's tokenizer on data/wiki.txt (WordPiece, byte-level BPE, Unigram) and
   measures vocabulary size and tokens per word on held-out articles;
2. pretrains a small model of each family on the same token budget (BERT: MLM + NSP with static
   masks; RoBERTa: MLM with dynamic masks over full sentences; ALBERT: MLM + SOP with n-gram masks,
   factorized embeddings and one shared layer), tracking held-out MLM accuracy;
3. fine-tunes each on data/debian-sections (package descriptions → archive section) and scores
   the test split, next to a bag-of-words logistic-regression baseline;
4. prints one table and writes runs/demo/report.md with it and PNG plots (curves, bars,
   parameter breakdown, attention maps).

`--quick` is a smoke test (< 2 minutes); `--budget-minutes N` scales the pretraining; Ctrl-C
checkpoints, and `--resume` continues where the run stopped.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = {"bert": "WordPiece", "roberta": "byte-level BPE", "albert": "Unigram"}
ATTENTION_SENTENCE = "The anarchist movement opposed the state, but the state did not disappear."


@dataclass
class Plan:
    preset: str
    vocab_size: int
    corpus_bytes: int | None  # None = all of data/wiki.txt
    seq_len: int
    batch_size: int
    steps: int
    eval_every: int
    finetune_epochs: float
    finetune_length: int
    bf16: bool

    @classmethod
    def make(cls, quick: bool, budget_minutes: float, bf16: bool) -> "Plan":
        if quick:
            return cls("tiny", 2000, 700_000, 64, 16, 24, 12, 1.0, 32, bf16)
        # tiny models, so that ten CPU minutes buy enough updates to get past the unigram plateau
        steps = max(40, round(400 * budget_minutes / 10))
        return cls("tiny", 8000, None, 64, 64, steps, max(10, steps // 5), 3.0, 48, bf16)


def data_path(*parts: str) -> Path:
    path = ROOT.joinpath("data", *parts)
    if not path.exists():
        raise FileNotFoundError(f"{path}: the demo's data ships with the project; is this a full checkout?")
    return path


def bf16_pays() -> bool:
    """bf16 autocast where the CPU multiplies bf16 matrices clearly faster than fp32 (AMX, AVX512-BF16)."""
    speeds = {}
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(512, 512, dtype=dtype)
        a @ a
        start = time.perf_counter()
        for _ in range(8):
            a @ a
        speeds[dtype] = 1 / (time.perf_counter() - start)
    return speeds[torch.bfloat16] > 1.5 * speeds[torch.float32]


def split_corpus(out: Path, max_bytes: int | None, heldout_docs: int = 6) -> tuple[Path, Path]:
    """data/wiki.txt → train.txt and heldout.txt, whole documents, the last few held out."""
    text = data_path("wiki.txt").read_text(encoding="utf-8")
    docs = [d.strip() for d in text.split("\n\n") if d.strip()]
    train, heldout = docs[:-heldout_docs], docs[-heldout_docs:]
    if max_bytes is not None:
        kept, size = [], 0
        for d in train:
            if size > max_bytes:
                break
            kept.append(d)
            size += len(d)
        train = kept
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.txt").write_text("\n\n".join(train) + "\n", encoding="utf-8")
    (out / "heldout.txt").write_text("\n\n".join(heldout) + "\n", encoding="utf-8")
    return out / "train.txt", out / "heldout.txt"


def tokens_per_word(tok, path: Path) -> float:
    lines = [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    tokens = sum(len(e.ids) for e in tok.encode_batch(lines, add_special_tokens=False, padding=False, truncation=False))
    return tokens / sum(len(l.split()) for l in lines)


def stage_seconds(run_dir: Path, seconds: float, reused: bool) -> float:
    """A stage's wall time, kept in its directory so that a resumed demo reports the time it really took."""
    file = run_dir / "demo_seconds.json"
    if reused and file.is_file():
        return json.loads(file.read_text())["seconds"]
    file.write_text(json.dumps({"seconds": seconds}) + "\n")
    return seconds


def say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, flush=True)


def run(args) -> int:
    from .models.params import count
    from .tasks.baseline import BagOfWordsBaseline
    from .tasks.finetune import FinetuneOptions, finetune
    from .tasks.pipeline import Pipeline
    from .tokenizers import Tokenizer, train
    from .train.pretrain import PretrainOptions, pretrain

    out = Path(args.out)
    quiet = args.quiet
    plan = Plan.make(args.quick, args.budget_minutes, bf16=not args.fp32 and bf16_pays())
    say(f"bertology demo → {out}  ({'quick' if args.quick else f'budget {args.budget_minutes:g} min'}: "
        f"{plan.preset} models, {plan.steps} steps × {plan.batch_size} × {plan.seq_len} tokens each, "
        f"{'bf16' if plan.bf16 else 'fp32'})", quiet)
    started = time.perf_counter()
    if not args.resume:  # a fresh run: the demo's own stage directories start empty
        for stage in ("tokenizers", "pretrain", "finetune"):
            shutil.rmtree(out / stage, ignore_errors=True)
    train_txt, heldout_txt = split_corpus(out / "corpus", plan.corpus_bytes)
    rows: dict[str, dict] = {}

    say("\n1/4 tokenizers", quiet)
    for family, algorithm in FAMILIES.items():
        path = out / "tokenizers" / family / "tokenizer.json"
        t0 = time.perf_counter()
        if not (args.resume and path.is_file()):
            # WordPiece by frequency, as Hugging Face's trainer and Google's vocabularies behave: the
            # likelihood criterion (bertology's default) needs ~2x the tokens per word at these sizes.
            extra = {"criterion": "frequency"} if family == "bert" else {}
            tok = train([train_txt], family=family, vocab_size=plan.vocab_size, show_progress=False, **extra)
            tok.save(path)
        tok = Tokenizer.load(path)
        rows[family] = {"tokenizer": algorithm, "vocab": tok.vocab_size, "tokens_per_word": tokens_per_word(tok, heldout_txt)}
        say(f"   {family:<8} {algorithm:<15} vocab {tok.vocab_size:>6,}  {rows[family]['tokens_per_word']:.3f} tokens/word "
            f"on held-out articles ({time.perf_counter() - t0:.1f} s)", quiet)

    say("\n2/4 pretraining (same token budget for each)", quiet)
    for family in FAMILIES:
        run_dir = out / "pretrain" / family
        done = run_dir / "summary.json"
        t0 = time.perf_counter()
        reused = args.resume and done.is_file() and (run_dir / "model.safetensors").is_file()
        if reused:
            summary = json.loads(done.read_text())
        else:
            options = PretrainOptions(
                family=family, corpus=[str(train_txt)], out_dir=str(run_dir), preset=plan.preset,
                tokenizer=str(out / "tokenizers" / family / "tokenizer.json"), steps=plan.steps,
                batch_size=plan.batch_size, seq_len=plan.seq_len, lr=2e-3, warmup=max(2, plan.steps // 10),
                bf16=plan.bf16, dupe_factor=3, heldout=3 if plan.corpus_bytes else 0.05, eval_every=plan.eval_every, log_every=max(1, plan.steps // 40),
                quiet=quiet,
            )
            resume = args.resume and (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
            if not resume:
                shutil.rmtree(run_dir, ignore_errors=True)  # nothing to continue: start this stage afresh
            summary = pretrain(options, resume=resume)
            if summary["interrupted"]:
                print(f"interrupted during {family} pretraining; continue with: bertology demo --resume"
                      + (" --quick" if args.quick else ""))
                return 130
        evaluation = summary["eval"]
        seconds = stage_seconds(run_dir, time.perf_counter() - t0, reused)
        rows[family].update(
            parameters=summary["parameters"], tokens_per_s=summary["final"].get("tokens_per_s", float("nan")),
            mlm_accuracy=evaluation.get("eval/mlm_accuracy", float("nan")),
            pair_accuracy=evaluation.get("eval/pair_accuracy"), objective=summary["objective"],
            pretrain_s=seconds,
        )
        say(f"   {family:<8} {summary['objective']:<8} {summary['parameters']:>10,} parameters  "
            f"{rows[family]['tokens_per_s']:>7,.0f} tokens/s  held-out MLM accuracy {rows[family]['mlm_accuracy']:.3f}"
            + (f"  pair accuracy {rows[family]['pair_accuracy']:.3f}" if rows[family]["pair_accuracy"] is not None else ""),
            quiet)

    say("\n3/4 fine-tuning on data/debian-sections (package description → section)", quiet)
    train_tsv, dev_tsv, test_tsv = (data_path("debian-sections", f"{s}.tsv") for s in ("train", "dev", "test"))
    for family in FAMILIES:
        run_dir = out / "finetune" / family
        scores_file = run_dir / "test_scores.json"
        t0 = time.perf_counter()
        reused = args.resume and scores_file.is_file()
        if not reused:
            shutil.rmtree(run_dir, ignore_errors=True)  # fine-tuning restarts from its beginning
            finetune(FinetuneOptions(
                model=str(out / "pretrain" / family), task="classify", train=str(train_tsv), dev=str(dev_tsv),
                out_dir=str(run_dir), epochs=plan.finetune_epochs, lr=1e-3,
                batch_size=32, max_length=plan.finetune_length, bf16=plan.bf16, quiet=quiet,
            ))
            pipe = Pipeline.load(run_dir)
            scores = pipe.evaluate(pipe.read(str(test_tsv)))
            scores_file.write_text(json.dumps(scores) + "\n")
        scores = json.loads(scores_file.read_text())
        seconds = stage_seconds(run_dir, time.perf_counter() - t0, reused)
        rows[family].update(test_accuracy=scores["accuracy"], test_macro_f1=scores["macro_f1"], finetune_s=seconds)
        say(f"   {family:<8} test accuracy {scores['accuracy']:.3f}  macro-F1 {scores['macro_f1']:.3f}", quiet)
    from .tasks.classification import ClassifyTask

    task = ClassifyTask()
    baseline = BagOfWordsBaseline().fit(task.read(str(train_tsv)))
    baseline_accuracy = baseline.score(task.read(str(test_tsv)))["accuracy"]
    say(f"   {'baseline':<8} bag-of-words logistic regression: test accuracy {baseline_accuracy:.3f}", quiet)

    say("\n4/4 report", quiet)
    report = write_report(out, plan, rows, baseline_accuracy, time.perf_counter() - started, count)
    print("\n" + report["table"])
    print(f"\nreport: {report['path']} (+ {len(report['images'])} plots)")
    return 0


def table(rows: dict[str, dict], baseline_accuracy: float) -> str:
    header = ("| model | tokenizer (vocab, tokens/word) | parameters | pretraining tokens/s | held-out MLM acc. "
              "| NSP / SOP acc. | Debian test acc. | macro-F1 | wall time |")
    lines = [header, "|" + "---|" * 9]
    for family, r in rows.items():
        pair = f"{r['pair_accuracy']:.3f} ({'NSP' if family == 'bert' else 'SOP'})" if r.get("pair_accuracy") is not None else "–"
        lines.append(
            f"| {family} | {r['tokenizer']} ({r['vocab']:,}, {r['tokens_per_word']:.2f}) | {r['parameters']:,} "
            f"| {r['tokens_per_s']:,.0f} | {r['mlm_accuracy']:.3f} | {pair} | {r['test_accuracy']:.3f} "
            f"| {r['test_macro_f1']:.3f} | {r['pretrain_s'] + r['finetune_s']:.0f} s |")
    lines.append(f"| bag-of-words baseline | – | – | – | – | – | {baseline_accuracy:.3f} | – | – |")
    return "\n".join(lines)


def write_report(out: Path, plan: Plan, rows: dict, baseline_accuracy: float, wall_s: float, count) -> dict:
    from . import load
    from .io import atomic_write_text
    from .tokenizers import Tokenizer
    from .viz import write_attention
    from .viz.plots import plot_bars, plot_curves, plot_parameter_breakdown, read_metrics

    images = []
    runs = {f: read_metrics(out / "pretrain" / f / "metrics.jsonl") for f in rows}
    tokens_per_step = {f: plan.batch_size * plan.seq_len for f in rows}
    images.append(plot_curves(runs, out / "pretraining.png", tokens_per_step))
    accuracies = {**{f: r["test_accuracy"] for f, r in rows.items()}, "baseline": baseline_accuracy}
    images.append(plot_bars(accuracies, out / "downstream.png", "test accuracy", "Debian sections (10 classes)"))
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
    text = table(rows, baseline_accuracy)
    body = [
        "# bertology demo report", "",
        f"{plan.preset} models, {plan.steps} pretraining steps of {plan.batch_size} × {plan.seq_len} tokens each "
        f"({plan.steps * plan.batch_size * plan.seq_len:,} tokens per model), {'bf16 autocast' if plan.bf16 else 'fp32'}; "
        f"fine-tuned {plan.finetune_epochs:g} epochs on data/debian-sections; total wall time {wall_s / 60:.1f} min.", "",
        text, "",
        "Tokens/word: on held-out Wikipedia articles. MLM accuracy: masked tokens predicted exactly, on held-out "
        "instances. NSP / SOP: the pair objective's held-out accuracy (RoBERTa has none).", "",
        "![pretraining curves](pretraining.png)", "", "![downstream accuracy](downstream.png)", "",
        "![parameter breakdown](parameters.png)", "",
        *[f"![attention {f}](attention-{f}.png)" for f in rows], "",
    ]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(body))
    return {"table": text, "path": path, "images": images}
