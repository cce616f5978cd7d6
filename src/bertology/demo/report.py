"""The demo's reference lines (linear models on the same label subsets), its tables, plots,
results.json and report.md."""

from __future__ import annotations

import json
from pathlib import Path

from ..tasks.grid import GridResult
from .curve import accuracy_interval, compare, labels_of, twin
from .plan import Budget, Plan, count_order, label_count, label_name
from .stages import EQUAL_TIME, FAMILIES, data_path, minilm_path

ATTENTION_SENTENCE = "A free real-time strategy game of ancient warfare, with a powerful custom game engine."
BAG_OF_WORDS, WORD2VEC, MINILM = "bag-of-words", "word2vec average", "MiniLM embeddings (frozen)"


def reference_lines(
    counts: list[int | None], vectors: Path, bert_tokenizer: Path, say, encoder: bool = True
) -> dict[str, dict[str, dict]]:
    """{line: {label count: {test_accuracy, correct}}}: logistic regressions on TF-IDF words and
    bigrams, on averaged word2vec vectors over BERT's pieces, and (with `encoder`) on the real MiniLM's
    frozen sentence embeddings, each fitted on the same class-balanced subsets the models fine-tune on."""
    from ..tasks.baseline import BagOfWordsBaseline, EncoderBaseline, WordVectorBaseline
    from ..tasks.classification import ClassifyTask
    from ..tasks.subsets import balanced_subset
    from ..tokenizers import Tokenizer
    from ..wordvec import KeyedVectors
    from .. import load

    task = ClassifyTask()
    train = task.read(str(data_path("debian-sections", "train.tsv")))
    test = task.read(str(data_path("debian-sections", "test.tsv")))
    minilm = minilm_path()
    subsets = {count: [train[i] for i in balanced_subset([e.label for e in train], count, seed=0)] for count in counts}
    makers = {
        BAG_OF_WORDS: BagOfWordsBaseline,
        WORD2VEC: lambda: WordVectorBaseline(KeyedVectors.load(str(vectors)), tokenizer=Tokenizer.load(bert_tokenizer)),
        MINILM: lambda: EncoderBaseline(load(minilm), Tokenizer.load(minilm / "tokenizer.json")),
    }
    if not encoder:
        del makers[MINILM]
    lines: dict[str, dict[str, dict]] = {}
    for name, make in makers.items():
        model = make()  # one per line: an encoder's embeddings are computed once for every count
        lines[name] = {}
        for count, subset in subsets.items():
            predicted = [p.label for p in model.fit(subset).predict(test)]
            correct = [p == e.label for p, e in zip(predicted, test)]
            lines[name][label_name(count)] = {"test_accuracy": sum(correct) / len(correct), "correct": correct}
        say(f"   {name:<28} " + "  ".join(f"{k}: {v['test_accuracy']:.3f}" for k, v in lines[name].items()))
    return lines


def curve_entry(grid: GridResult, twin: GridResult | None, bag: dict | None, count: str) -> dict:
    entry = {
        "labels_per_class": label_count(count),
        "test_accuracy": grid.ensemble_test,
        "test_accuracy_ci95": accuracy_interval(grid.correct()),
        "test_accuracy_seed_mean": grid.test_mean,
        "test_accuracy_seed_std": grid.test_std,
        "method": grid.method,
        "lr": grid.lr,
        "dev_accuracy_seed_mean": grid.dev_mean,
        "seeds": sorted(r["seed"] for r in grid.runs if r["lr"] == grid.lr),  # the ensemble's
    }
    if twin is not None:
        gain = compare(grid, twin.correct())
        entry.update(
            random_init_test_accuracy=twin.ensemble_test,
            random_init_test_accuracy_ci95=accuracy_interval(twin.correct()),
            random_init_lr=twin.lr,
            random_init_method=twin.method,
            gain=gain["diff"],
            ci95=gain["ci95"],
            significant=gain["significant"],
        )
    if bag is not None:
        entry["vs_bag_of_words"] = compare(grid, bag["correct"])
    return entry


def twin_of(name: str) -> str | None:
    """The twin a start is compared with (the other BERT-tiny starts share BERT's); None for a twin."""
    if name.endswith(twin("")):
        return None
    return twin(name if name in FAMILIES else "bert")


def results(
    rows: dict[str, dict],
    student: dict,
    curves: dict[str, dict[str, GridResult]],
    references: dict[str, dict[str, dict]],
) -> list[dict]:
    """runs/demo/results.json: one object per pretrained model (the top-level accuracies at the
    largest label count that ran), then the teacher track and the reference lines."""
    bag = references[BAG_OF_WORDS]
    out = []
    for name, grids in curves.items():
        twin = twin_of(name)
        if twin is None:
            continue
        curve = [curve_entry(g, curves[twin].get(c), bag.get(c), c) for c, g in grids.items()]
        curve.sort(key=lambda e: count_order(e["labels_per_class"]))
        last = max(grids, key=lambda c: count_order(label_count(c)))
        pre, rand = grids[last], curves[twin][last]
        entry = {
            "model": name,
            "test_accuracy": pre.test_mean,
            "test_accuracy_std": pre.test_std,
            "random_init_test_accuracy": rand.test_mean,
            "random_init_test_accuracy_std": rand.test_std,
            "method": pre.method,
            "lr": pre.lr,
            "random_init_method": rand.method,
            "random_init_lr": rand.lr,
            "seeds": sorted({r["seed"] for r in pre.runs}),
            "labels_per_class": last,
            "label_curve": curve,
        }
        if name in rows:
            r = rows[name]
            entry.update(
                pretraining_tokens=r["pretraining_tokens"],
                pretraining_seconds=r["pretrain_s"],
                pretraining_tokens_per_s=r["tokens_per_s"],
                mlm_accuracy=r["mlm_accuracy"],
                unigram_accuracy=r["unigram_accuracy"],
                pair_accuracy=r["pair_accuracy"],
                parameters=r["parameters"],
                tokenizer=r["tokenizer"],
                vocab_size=r["vocab"],
                tokens_per_word=r["tokens_per_word"],
                init_embeddings=r.get("init_embeddings"),
            )
        else:  # the teacher track's student
            entry.update(
                teacher="all-MiniLM-L6-v2",
                parameters=student["parameters"],
                teacher_parameters=student["teacher_parameters"],
                distillation_seconds=student["distill_s"],
                teacher_texts=student["texts"],
                heldout_cosine=student["heldout_cosine"],
                inference_speedup=student.get("speedup"),
            )
        out.append(entry)
    for name, line in references.items():
        out.append(
            {
                "model": name,
                "label_curve": [
                    {
                        "labels_per_class": label_count(c),
                        "test_accuracy": v["test_accuracy"],
                        "test_accuracy_ci95": accuracy_interval(v["correct"]),
                    }
                    for c, v in line.items()
                ],
            }
        )
    return out


def _method(entry: dict, prefix: str) -> str:
    """ "prompt (0.001)": the method and rate dev chose (reference lines have neither: "–")."""
    method, lr = entry.get(prefix + "method"), entry.get(prefix + "lr")
    return "–" if method is None else method if method == "probe" else f"{method} ({lr:g})"


def _gain(diff: float, ci95: list[float], significant: bool) -> str:
    text = f"{diff:+.3f} [{ci95[0]:+.3f}, {ci95[1]:+.3f}]"
    return f"**{text}**" if significant else text


def _accuracy(accuracy: float, ci95: list[float]) -> str:
    return f"{accuracy:.3f} [{ci95[0]:.3f}, {ci95[1]:.3f}]"


def tables(rows: dict[str, dict], results_list: list[dict], counts: list[str]) -> str:
    pre = [
        "| model | tokenizer (vocab, tokens/word) | parameters | pretraining: tokens (s, tokens/s) "
        "| held-out MLM / PLM acc. (unigram) | NSP / SOP / replaced-token acc. |",
        "|" + "---|" * 6,
    ]
    for name, r in rows.items():
        kind = {"mlm+nsp": "NSP", "mlm+sop": "SOP", "rtd": "RTD"}.get(r["objective"])
        pair = f"{r['pair_accuracy']:.3f} ({kind})" if r.get("pair_accuracy") is not None else "–"
        pre.append(
            f"| {name} | {r['tokenizer']} ({r['vocab']:,}, {r['tokens_per_word']:.2f}) | {r['parameters']:,} "
            f"| {r['pretraining_tokens']:,} ({r['pretrain_s']:.0f} s, {r['tokens_per_s']:,.0f}/s) "
            f"| {r['mlm_accuracy']:.3f} ({r['unigram_accuracy']:.3f}) | {pair} |"
        )
    for name, partner in EQUAL_TIME.items():  # the race of equal time: the same seconds, not the same steps
        if name in rows and partner in rows:
            a, b = rows[name], rows[partner]
            pre += [
                "",
                f"{name} pretrained on the wall-clock budget of {partner} ({a['time_budget_s']:.0f} s each, setup "
                f"included; {a['train_s']:.0f} and {b['train_s']:.0f} s of training): {a['pretraining_tokens']:,} tokens "
                f"in {a['pretraining_steps']:,} steps against {b['pretraining_tokens']:,} in {b['pretraining_steps']:,}.",
            ]
    seeds = {
        label_name(p["labels_per_class"]): len(p["seeds"])
        for e in results_list
        for p in e["label_curve"]
        if "seeds" in p
    }
    header = (
        "| start | method (lr), chosen on dev | "
        + " | ".join(
            f"{c} labels/class" + (f" ({seeds[c]} seed{'s' * (seeds[c] != 1)})" if c in seeds else "") for c in counts
        )
        + " |"
    )
    curve = [header, "|" + "---|" * (len(counts) + 2)]
    gains = [
        "| model | "
        + " | ".join(f"gain over twin, {c}/class" for c in counts)
        + " | "
        + " | ".join(f"vs bag-of-words, {c}/class" for c in counts)
        + " |",
        "|" + "---|" * (2 * len(counts) + 1),
    ]
    for e in results_list:
        at = {label_name(p["labels_per_class"]): p for p in e["label_curve"]}
        curve.append(
            f"| {e['model']} | {_method(e, '')} | "
            + " | ".join(
                _accuracy(at[c]["test_accuracy"], at[c]["test_accuracy_ci95"]) if c in at else "–" for c in counts
            )
            + " |"
        )
        if e["model"] in FAMILIES:  # its twin's row under it (the other BERT-tiny starts share BERT's twin)
            curve.append(
                f"| {twin(e['model'])} | {_method(e, 'random_init_')} | "
                + " | ".join(
                    _accuracy(at[c]["random_init_test_accuracy"], at[c]["random_init_test_accuracy_ci95"])
                    if c in at
                    else "–"
                    for c in counts
                )
                + " |"
            )
        if "random_init_test_accuracy" in e:
            gains.append(
                f"| {e['model']} | "
                + " | ".join(
                    _gain(at[c]["gain"], at[c]["ci95"], at[c]["significant"]) if c in at else "–" for c in counts
                )
                + " | "
                + " | ".join(_gain(**at[c]["vs_bag_of_words"]) if c in at else "–" for c in counts)
                + " |"
            )
    for e in results_list:
        if "teacher" in e:
            pre += [
                "",
                "Teacher track (the real all-MiniLM-L6-v2 distilled at the sentence level into BERT-tiny with "
                "BERT's tokenizer):",
                "",
                "| student | parameters (teacher) | texts the teacher embedded (s) | held-out cosine to the teacher "
                "| CPU inference speed vs the teacher |",
                "|---|---|---|---|---|",
                f"| {e['model']} | {e['parameters']:,} ({e['teacher_parameters']:,}, "
                f"{e['parameters'] / e['teacher_parameters']:.1%}) | {e['teacher_texts']:,} "
                f"({e['distillation_seconds']:.0f} s) | {e['heldout_cosine']:.3f} | {e['inference_speedup']:.1f}× |",
            ]
    return (
        "Pretraining:\n\n" + "\n".join(pre) + "\n\nTest accuracy (ensemble of the seeds) [95% bootstrap interval], "
        "by labelled examples per class:\n\n" + "\n".join(curve) + "\n\nGains, paired bootstrap over the test items "
        "(bold: the interval excludes 0):\n\n" + "\n".join(gains)
    )


def wall_time(budget: Budget) -> str:
    """'3.2 min of 20' (and how much an interrupted run spent, for a resumed one)."""
    resumed = f" ({budget.before / 60:.1f} before --resume)" if budget.before else ""
    return f"{budget.spent() / 60:.1f} min of {budget.seconds / 60:g}{resumed}"


def cut_lines(budget: Budget) -> list[str]:
    """The report's account of what the clock cut, and why (nothing when the plan ran whole)."""
    if not budget.cuts:
        return []
    return ["", "Cut to hold the budget (each stage checks the clock and cuts what is left):", ""] + [
        f"- {line}" for line in budget.cuts
    ]


def write_report(
    out: Path,
    plan: Plan,
    rows: dict,
    student: dict,
    curves: dict[str, dict[str, GridResult]],
    references: dict[str, dict[str, dict]],
    budget: Budget,
) -> dict:
    from .. import load
    from ..io import atomic_write_text
    from ..models.params import count
    from ..tokenizers import Tokenizer
    from ..viz import write_attention
    from ..viz.plots import plot_curves, plot_label_curve, plot_parameter_breakdown, read_metrics

    listed = results(rows, student, curves, references)
    atomic_write_text(out / "results.json", json.dumps(listed, indent=2) + "\n")
    counts = [
        label_name(c)
        for c in sorted(plan.label_counts, key=count_order)
        if any(label_name(c) in g for g in curves.values())
    ]
    metrics = {f: read_metrics(out / "pretrain" / f / "metrics.jsonl") for f in rows}
    images = [
        plot_curves(metrics, out / "pretraining.png", {f: plan.batch_size * plan.seq_len for f in rows}),
        # the same runs against wall-clock seconds: an ELECTRA step costs more than BERT's (its generator)
        plot_curves(metrics, out / "pretraining-time.png", seconds=True),
    ]
    lines, methods = {}, {}  # each family's line, then its twin's; the method dev chose for each
    for e in listed:
        methods[e["model"]] = e.get("method")
        lines[e["model"]] = [
            (p["labels_per_class"], p["test_accuracy"], p["test_accuracy_ci95"]) for p in e["label_curve"]
        ]
        if e["model"] in FAMILIES:
            methods[twin(e["model"])] = e.get("random_init_method")
            lines[twin(e["model"])] = [
                (p["labels_per_class"], p["random_init_test_accuracy"], p["random_init_test_accuracy_ci95"])
                for p in e["label_curve"]
            ]
    train_labels = labels_of(data_path("debian-sections", "train.tsv"))
    all_labels = round(len(train_labels) / len(set(train_labels)))  # per class, where the "all" points are drawn
    images.append(
        plot_label_curve(
            lines,
            out / "label-curve.png",
            all_labels=all_labels,
            references=set(references),
            methods={name: m for name, m in methods.items() if m is not None},
            title="Debian sections (10 classes): test accuracy against labelled examples",
        )
    )
    breakdown = {}
    for family in FAMILIES:
        model = load(out / "pretrain" / family)
        c = count(model.config)
        breakdown[family] = {"embeddings": sum(c.embeddings.values()), "encoder": c.encoder, "pooler": c.pooler}
        tok = Tokenizer.load(out / "pretrain" / family / "tokenizer.json")
        tok.no_padding()
        images.append(out / f"attention-{family}.png")
        write_attention(images[-1], model, tok, ATTENTION_SENTENCE)
    images.append(plot_parameter_breakdown(breakdown, out / "parameters.png"))
    text = tables(rows, listed, counts)
    tokens = sum(r.get("pretraining_tokens", 0) for r in rows.values())
    body = [
        "# bertology demo report",
        "",
        f"{plan.preset} models pretrained on data/debian-descriptions for an equal share of a {budget.seconds / 60:g}-minute "
        f"budget on {plan.device} ({plan.batch_size} × {plan.seq_len} tokens a step, "
        f"{'bf16 autocast' if plan.bf16 else 'fp32'}; {tokens:,} pretraining tokens in all); "
        f"fine-tuned on class-balanced subsets of data/debian-sections, the method (a new head: lr ∈ "
        f"{{{', '.join(f'{x:g}' for x in plan.learning_rates)}}}; the pretrained head through a prompt: lr ∈ "
        f"{{{', '.join(f'{x:g}' for x in plan.prompt_rates)}}}; a probe on frozen vectors) chosen on mean dev accuracy "
        f"at {label_name(plan.label_counts[0])} labels per class and kept, the seeds of each count (up to "
        f"{len(plan.seeds)}, as the budget allowed) ensembled; total wall time {wall_time(budget)}.",
        *cut_lines(budget),
        "",
        text,
        "",
        "![label curve](label-curve.png)",
        "",
        "![pretraining curves](pretraining.png)",
        "",
        "![pretraining curves against seconds](pretraining-time.png)",
        "",
        "![parameter breakdown](parameters.png)",
        "",
        *[f"![attention {f}](attention-{f}.png)" for f in FAMILIES],
        "",
    ]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(body))
    return {"table": text, "path": path, "images": images, "tokens": tokens}
