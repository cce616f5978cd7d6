"""Does continued pretraining pay? The real all-MiniLM-L6-v2 continued on data/debian-descriptions
(domain-adaptive, DAPT) for a fixed wall-clock budget on this CPU, with and without vocabulary
extension, and a tiny BERT pretrained as the demo does then continued on the task's own train texts
(task-adaptive, TAPT); every start fine-tuned on data/debian-sections through the demo's label curve.

    python bench/continued_pretraining.py [--minutes 3] [--extend-vocab 1000] [--tapt-minutes 1]
                                          [--quick] [--lrs 1e-4,3e-4] [--counts 10,30,100,all] [--out runs/continued]

Arms: MiniLM as it ships; MiniLM + DAPT (`pretrain --init`, MLM only: MiniLM has no MLM head, so a
new one is built, tied, its bias from the unigram prior); MiniLM + DAPT with --extend-vocab; a
tiny BERT pretrained with the demo's recipe (bertology.demo.recipe) for --tiny-minutes, and the
same continued on the train texts (--text-column text) for --tapt-minutes.

Fine-tuning is the demo's label curve (bertology.demo.curve.label_curves): its plan's seeds and
label counts (bertology.demo.plan.Plan; --quick: the demo's --quick plan), the learning rate chosen
on dev at the first count from the grid and kept, each run's best dev epoch, the seeds' ensemble on
test, and each adapted start against its base by the paired bootstrap over the test items
(bertology.tasks.bootstrap via demo.curve.compare). The grid is the plan's unless --lrs is given:
the demo's rates suit tiny models trained from scratch; a 22 M-parameter pretrained MiniLM wants
smaller ones, so the MiniLM arms take --minilm-lrs (default tasks.grid's lower half, 1e-4 and 3e-4).

Also the speed claim: tokens/s of a continued run (`--init` MiniLM) against a from-scratch run of
the same shape (MiniLM's config as overrides, its tokenizer), interleaved rounds, medians, ratio; and
the same for ELECTRA's pair (`--init` a from-scratch ELECTRA run's directory, discriminator and
generator, against a from-scratch run of its preset and tokenizer; part `electra-speed`).
Writes results.json and table.md under --out.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import json
import shutil
import statistics
import time
from dataclasses import replace

from bertology.demo import CORPORA, small_budget_options
from bertology.demo.curve import Start, accuracy_interval, compare, label_curves, labels_of
from bertology.demo.plan import Budget, Plan, label_count, label_name
from bertology.demo.stages import minilm_path
from bertology.hardware import bf16_pays, cpu_summary
from bertology.models import read_config
from bertology.tokenizers import train
from bertology.train.pretrain import PretrainOptions, pretrain
from bertology.viz.plots import plot_label_curve

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "data" / "debian-sections"
MINILM, DAPT, DAPT_EXT, TINY, TAPT = "minilm", "minilm+dapt", "minilm+dapt+vocab", "tiny-bert", "tiny-bert+tapt"
BASE_OF = {DAPT: MINILM, DAPT_EXT: MINILM, TAPT: TINY}


def say(message: str) -> None:
    print(message, flush=True)


def dapt(out: Path, args, extend: int | None) -> dict:
    """MiniLM continued on the Debian descriptions for args.minutes of training."""
    options = PretrainOptions(
        family="bert",
        init=str(minilm_path()),
        corpus=[str(c) for c in CORPORA["debian"]],
        out_dir=str(out),
        objective="mlm",
        time_budget=args.minutes,
        budget_warmup=0.06,
        lr=args.dapt_lr,
        batch_size=args.batch_size,
        max_length=args.max_length,
        bf16=args.bf16,
        heldout=0.01,
        eval_every=10_000,
        log_every=10,
        quiet=True,
        extend_vocab=extend,
        vocab_size=args.domain_vocab if extend else None,
        dupe_factor=1,
    )
    return pretrain(options, overwrite=True)


def tiny_and_tapt(out: Path, args) -> tuple[dict, dict]:
    """A tiny BERT pretrained the demo's way on the descriptions, then continued on the task's train texts."""
    tok = out / "tokenizer.json"
    if not tok.is_file():
        train(
            [str(c) for c in CORPORA["debian"]],
            family="bert",
            vocab_size=8000,
            show_progress=False,
            criterion="frequency",
        ).save(tok)
    base = small_budget_options(
        "bert",
        CORPORA["debian"],
        str(tok),
        str(out / TINY),
        None,
        args.bf16,
        minutes=args.tiny_minutes,
        batch_size=64,
        max_length=32,
        preset="tiny",
        quiet=True,
    )
    tiny = reused(out / TINY, args) or pretrain(base, overwrite=True)
    tapt_options = replace(
        base,
        out_dir=str(out / TAPT),
        init=str(out / TINY),
        preset=None,
        tokenizer=None,
        vocab_size=None,
        corpus=[str(TASK / "train.tsv")],
        text_column="text",
        time_budget=args.tapt_minutes,
        heldout=0.02,
        dupe_factor=5,
    )
    return tiny, reused(out / TAPT, args) or pretrain(tapt_options, overwrite=True)


def reused(run: Path, args) -> dict | None:
    """With --reuse, the summary of a finished pretraining run in `run` (None: run it)."""
    done = run / "summary.json"
    return json.loads(done.read_text()) if args.reuse and done.is_file() else None


def speed(out: Path, args) -> dict:
    """Tokens/s of `--init` MiniLM against a from-scratch model of MiniLM's shape, same data, same steps:
    interleaved rounds, the median of each side."""
    config = read_config(minilm_path())
    shape = {
        k: getattr(config, k)
        for k in (
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
        )
    }
    common = dict(family="bert", corpus=[_sample(out)], objective="mlm", **_speed_run(args))
    return _race(
        {
            "init": PretrainOptions(out_dir=str(out / "speed-init"), init=str(minilm_path()), **common),
            "scratch": PretrainOptions(
                out_dir=str(out / "speed-scratch"),
                tokenizer=str(minilm_path()),
                preset="mini",
                config_overrides=shape,
                **common,
            ),
        },
        args.speed_rounds,
    )


def speed_electra(out: Path, args) -> dict:
    """The same for ELECTRA's pair: `--init` a from-scratch run's directory (its discriminator and its
    generator/) against a from-scratch run of that preset and tokenizer: the same shapes, the same data."""
    common = dict(family="electra", corpus=[_sample(out)], **_speed_run(args))
    base = out / "speed-electra-base"
    pretrain(PretrainOptions(out_dir=str(base), preset=args.electra_preset, **{**common, "steps": 1}), overwrite=True)
    return _race(
        {
            "init": PretrainOptions(out_dir=str(out / "speed-electra-init"), init=str(base), **common),
            "scratch": PretrainOptions(
                out_dir=str(out / "speed-electra-scratch"), tokenizer=str(base), preset=args.electra_preset, **common
            ),
        },
        args.speed_rounds,
    )


def _sample(out: Path) -> str:
    """The first 300,000 characters of data/wiki.txt (whole documents), the speed runs' corpus."""
    sample = out / "sample.txt"
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    sample.write_text(text[: text.index("\n\n", 300_000) + 1], encoding="utf-8")
    return str(sample)


def _speed_run(args) -> dict:
    return dict(
        steps=args.speed_steps,
        batch_size=args.batch_size,
        max_length=args.max_length,
        bf16=args.bf16,
        heldout=0,
        log_every=1,
        quiet=True,
        warmup=1,
        dupe_factor=1,
    )


def _race(arms: dict[str, PretrainOptions], rounds: int) -> dict:
    """Each arm's tokens/s over `rounds` interleaved rounds, the median of each, and init / scratch."""
    measured: dict[str, list[float]] = {k: [] for k in arms}
    for _ in range(rounds):
        for name, options in arms.items():
            summary = pretrain(options, overwrite=True)
            measured[name].append(summary["final"]["tokens_per_s"])
    med = {k: statistics.median(v) for k, v in measured.items()}
    return {"tokens_per_s": measured, "median": med, "ratio_init_to_scratch": med["init"] / med["scratch"]}


def frozen_probe(starts: list[Start], counts: list[int | None]) -> dict[str, dict[str, float]]:
    """Test accuracy of a logistic regression on each start's frozen, mean-pooled, unit-length embeddings
    (the demo's MiniLM reference line) at each count, one class-balanced subset (seed 0): what continued
    MLM training did to the sentence geometry the fine-tuning starts from."""
    from bertology import Tokenizer, load
    from bertology.tasks.baseline import EncoderBaseline
    from bertology.tasks.classification import ClassifyTask
    from bertology.tasks.subsets import balanced_subset

    task = ClassifyTask()
    train, test = task.read(str(TASK / "train.tsv")), task.read(str(TASK / "test.tsv"))
    probe = {}
    for start in starts:
        model = EncoderBaseline(load(start.model), Tokenizer.load(start.model / "tokenizer.json"))
        probe[start.name] = {}
        for count in counts:
            subset = [train[i] for i in balanced_subset([e.label for e in train], count, seed=0)]
            probe[start.name][label_name(count)] = model.fit(subset).score(test)["accuracy"]
        say(f"   frozen {start.name:<24} " + "  ".join(f"{k}: {v:.3f}" for k, v in probe[start.name].items()))
    return probe


def plot(curves: dict, frozen: dict[str, dict[str, float]], path: Path) -> Path:
    """The label curve of every start (the seeds' ensemble, 95% bootstrap interval over the test items),
    and the frozen-embedding probe's lines (dotted: one subset, no interval)."""
    lines = {
        name: [(label_count(c), g.ensemble_test, accuracy_interval(g.correct())) for c, g in grids.items()]
        for name, grids in curves.items()
        if grids
    }
    probes = {
        f"{name}, frozen + logistic regression": [(label_count(c), a, None) for c, a in accs.items()]
        for name, accs in frozen.items()
    }
    train_labels = labels_of(TASK / "train.tsv")
    all_labels = len(train_labels) // len(set(train_labels))  # where "all" is drawn
    return plot_label_curve(
        {**lines, **probes},
        path,
        all_labels,
        "Debian sections: continued pretraining against its start",
        references=set(probes),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=3.0, help="DAPT training minutes per MiniLM arm (default 3)")
    parser.add_argument(
        "--extend-vocab", type=int, default=1000, help="pieces added in the extension arm (default 1000)"
    )
    parser.add_argument(
        "--domain-vocab",
        type=int,
        default=16000,
        help="size of the WordPiece trained on the descriptions to choose them from (default 16000)",
    )
    parser.add_argument("--dapt-lr", type=float, default=1e-4, help="continued pretraining peak rate (default 1e-4)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument(
        "--tiny-minutes", type=float, default=2.0, help="the tiny BERT's pretraining minutes (default 2)"
    )
    parser.add_argument("--tapt-minutes", type=float, default=1.0, help="its continued pretraining on the train texts")
    parser.add_argument(
        "--quick", action="store_true", help="the demo's --quick fine-tuning plan (2 seeds, 10 and all)"
    )
    parser.add_argument("--lrs", help="fine-tuning grid for the tiny arms (default: the plan's)")
    parser.add_argument("--minilm-lrs", default="1e-4,3e-4", help="fine-tuning grid for the MiniLM arms")
    parser.add_argument("--counts", help="label counts per class, e.g. 10,all (default: the plan's)")
    parser.add_argument(
        "--finetune-minutes",
        type=float,
        default=600.0,
        help="budget of the label curve (later counts are skipped when their measured cost does not fit)",
    )
    parser.add_argument("--speed-steps", type=int, default=8)
    parser.add_argument("--speed-rounds", type=int, default=3)
    parser.add_argument(
        "--electra-preset",
        default="small",
        help="the ELECTRA speed runs' preset (default small, Google's ELECTRA-Small discriminator)",
    )
    parser.add_argument(
        "--skip", default="", help="comma-separated parts to skip: speed, electra-speed, dapt, tapt, probe, finetune"
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse finished pretraining runs and fine-tuning grids found in --out (a stopped bench "
        "continues where it was)",
    )
    parser.add_argument("--out", default="runs/continued")
    args = parser.parse_args()
    args.bf16 = bf16_pays()
    skip = set(filter(None, args.skip.split(",")))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    say(f"{cpu_summary()}; {'bf16' if args.bf16 else 'fp32'}")
    results: dict = {"args": {k: v for k, v in vars(args).items()}}

    if "speed" not in skip:
        results["speed"] = speed(out, args)
        s = results["speed"]
        say(
            f"speed (MiniLM shape, B {args.batch_size} × T {args.max_length}, {args.speed_steps} steps, "
            f"{args.speed_rounds} interleaved rounds): --init {s['median']['init']:,.0f} tokens/s, from scratch "
            f"{s['median']['scratch']:,.0f} tokens/s, ratio {s['ratio_init_to_scratch']:.2f}"
        )
    if "electra-speed" not in skip:
        results["electra_speed"] = s = speed_electra(out, args)
        say(
            f"speed (ELECTRA-{args.electra_preset} pair, B {args.batch_size} × T {args.max_length}, {args.speed_steps} "
            f"steps, {args.speed_rounds} interleaved rounds): --init {s['median']['init']:,.0f} tokens/s, from scratch "
            f"{s['median']['scratch']:,.0f} tokens/s, ratio {s['ratio_init_to_scratch']:.2f}"
        )

    starts, pretraining = [], {}
    if "dapt" not in skip:
        starts.append(Start(MINILM, minilm_path()))
        for name, extend in ((DAPT, None), (DAPT_EXT, args.extend_vocab)):
            t0 = time.perf_counter()
            summary = reused(out / name, args) or dapt(out / name, args, extend)
            row = {
                "seconds": time.perf_counter() - t0,
                "steps": summary["steps"],
                "tokens": summary["tokens"],
                "tokens_per_s": summary["final"].get("tokens_per_s"),
                "eval": summary["eval"],
                "extension": (summary["init"] or {}).get("extension"),
            }
            pretraining[name] = row
            ext = row["extension"]
            say(
                f"{name}: {row['steps']} steps, {row['tokens']:,} tokens in {summary['train_seconds'] / 60:.1f} min of training "
                f"({row['tokens_per_s'] or 0:,.0f} tokens/s), held-out MLM accuracy "
                f"{row['eval'].get('eval/mlm_accuracy', float('nan')):.3f}"
                + (
                    f"; {ext['added']} pieces added, tokens per word {ext['tokens_per_word_before']:.3f} → "
                    f"{ext['tokens_per_word_after']:.3f}"
                    if ext
                    else ""
                )
            )
            starts.append(Start(name, out / name))
    if "tapt" not in skip:
        tiny, tapt = tiny_and_tapt(out, args)
        for name, summary in ((TINY, tiny), (TAPT, tapt)):
            pretraining[name] = {
                "steps": summary["steps"],
                "tokens": summary["tokens"],
                "eval": summary["eval"],
                "tokens_per_s": summary["final"].get("tokens_per_s"),
            }
            say(
                f"{name}: {summary['steps']} steps, {summary['tokens']:,} tokens, held-out MLM accuracy "
                f"{summary['eval'].get('eval/mlm_accuracy', float('nan')):.3f}"
            )
            starts.append(Start(name, out / name))
    results["pretraining"] = pretraining

    plan = Plan.make(quick=args.quick, bf16=args.bf16)
    if args.counts:
        plan = replace(plan, label_counts=tuple(label_count(c) for c in args.counts.split(",")))
    if "probe" not in skip:
        say("logistic regression on frozen mean-pooled embeddings (one subset per count, seed 0):")
        results["frozen"] = frozen_probe([s for s in starts if s.name.startswith("minilm")], list(plan.label_counts))
    if "finetune" in skip:
        starts = []
    curves = {}
    groups = [
        ([s for s in starts if s.name.startswith("minilm")], args.minilm_lrs),
        ([s for s in starts if s.name.startswith("tiny")], args.lrs),
    ]
    for group, lrs in groups:
        if not group:
            continue
        group_plan = replace(plan, learning_rates=tuple(float(x) for x in lrs.split(","))) if lrs else plan
        say(
            f"fine-tuning {', '.join(s.name for s in group)}: lr grid {group_plan.learning_rates}, seeds "
            f"{group_plan.seeds}, counts {[label_name(c) for c in group_plan.label_counts]}"
        )
        curves.update(
            label_curves(
                group,
                group_plan,
                Budget(60 * args.finetune_minutes),
                TASK,
                out / "finetune",
                resume=args.reuse,
                say=say,
            )
        )

    counts = [label_name(c) for c in sorted(plan.label_counts, key=lambda c: float("inf") if c is None else c)]
    table = ["| start | " + " | ".join(f"{c} / class" for c in counts) + " |", "|---|" + "---|" * len(counts)]
    rows = {}
    for start in starts:
        cells, row = [], {}
        for c in counts:
            grid = curves.get(start.name, {}).get(c)
            if grid is None:
                cells.append("–")
                continue
            cell = f"{grid.ensemble_test:.3f} ({grid.test_mean:.3f} ± {grid.test_std:.3f})"
            row[c] = {"ensemble": grid.ensemble_test, "mean": grid.test_mean, "std": grid.test_std, "lr": grid.lr}
            base = BASE_OF.get(start.name)
            base_grid = curves.get(base, {}).get(c) if base else None
            if base_grid is not None:
                cmp = compare(grid, base_grid.correct())
                row[c]["vs_base"] = cmp
                diff = f"{cmp['diff']:+.3f} [{cmp['ci95'][0]:+.3f}, {cmp['ci95'][1]:+.3f}]"
                cell += f", vs {base} " + (f"**{diff}**" if cmp["significant"] else diff)
            cells.append(cell)
        rows[start.name] = row
        table.append(f"| {start.name} | " + " | ".join(cells) + " |")
    results["curves"] = rows
    text = "\n".join(table)
    say(
        "\ntest accuracy: ensemble of the seeds (per-seed mean ± std), and against the start it continues "
        "(paired bootstrap over the test items, 95% interval; bold: it excludes 0)\n" + text
    )
    (out / "table.md").write_text(text + "\n", encoding="utf-8")
    if curves:
        say(f"wrote {plot(curves, results.get('frozen', {}), out / 'label-curve.png')}")
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    for name in (DAPT, DAPT_EXT):  # the checkpoints stay; their instance caches go
        shutil.rmtree(out / name / "cache", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
