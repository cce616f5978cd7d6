"""Comparison plots for training runs: curves from metrics.jsonl files, bars for final numbers."""

from __future__ import annotations

import json
from pathlib import Path

COLORS = {
    "bert": "#1f77b4",
    "roberta": "#d62728",
    "albert": "#2ca02c",
    "distilbert": "#9467bd",
    "xlnet": "#ff7f0e",
    "electra": "#17becf",
    "bert+word2vec": "#8c564b",
    "baseline": "#7f7f7f",
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def read_metrics(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _save(fig, path: str | Path) -> Path:
    from ..io import atomic_path

    plt = _pyplot()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
    return Path(path)


def plot_curves(
    runs: dict[str, list[dict]], path: str | Path, tokens_per_step: dict[str, int] | None = None, seconds: bool = False
) -> Path:
    """Training loss and held-out accuracy of the language-model objective (MLM, XLNet's PLM, ELECTRA's
    generator MLM) against tokens seen, or (`seconds`) against the run's wall-clock seconds, one line per run."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 3.8))
    for name, records in runs.items():
        scale = (tokens_per_step or {}).get(name, 1)
        # XLNet's permutation LM, ELECTRA's generator (its discriminator's loss is another scale), or MLM
        lm = next((k for k in ("plm", "generator_mlm") if any(f"{k}_loss" in r for r in records)), "mlm")
        train = [r for r in records if f"{lm}_loss" in r]
        evals = [r for r in records if f"eval/{lm}_accuracy" in r]
        color, label = COLORS.get(name), f"{name} ({lm.replace('generator_', 'generator ').upper()})"
        timed = [(r["step"], r["elapsed_s"]) for r in records if "elapsed_s" in r]

        def x(step: int) -> float:  # an evaluation's time: that of the nearest logged step at or before it
            return max((t for s, t in timed if s <= step), default=0.0) if seconds else step * scale

        left.plot([x(r["step"]) for r in train], [r[f"{lm}_loss"] for r in train], label=label, color=color)
        right.plot(
            [x(r["step"]) for r in evals], [r[f"eval/{lm}_accuracy"] for r in evals], "o-", label=label, color=color
        )
    xlabel = "seconds of pretraining" if seconds else "tokens seen" if tokens_per_step else "step"
    left.set(xlabel=xlabel, ylabel="MLM / PLM loss (train)", title="pretraining loss")
    right.set(xlabel=xlabel, ylabel="accuracy (held out)", title="held-out predicted-token accuracy")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    right.legend(loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)  # outside: inside, it covers a run's line
    return _save(fig, path)


# a held-out loss named otherwise than its training twin (google-research/electra's metric names)
HELD_OUT_TWIN = {"masked_lm_loss": "generator_mlm_loss", "disc_loss": "discriminator_loss"}
BASELINES = {"unigram_loss": "the corpus's unigram distribution"}  # held out: what the model has to beat


def plot_losses(records: list[dict], path: str | Path, title: str = "") -> Path:
    """One run's metrics.jsonl records against the tokens trained on, on a log scale (against the step for
    records without `tokens`): each held-out loss (`eval/…loss`, dots) beside its training twin (the same
    colour: each logged value faint, a running mean over a tenth of them bold), baselines dotted grey, and
    the training loss alone where nothing is held out."""
    plt = _pyplot()
    x_key = "tokens" if all("tokens" in r for r in records if "loss" in r) else "step"
    train = [r for r in records if "loss" in r and r.get(x_key, 0) > 0]
    held = sorted({k[len("eval/") :] for r in records for k in r if k.startswith("eval/") and k.endswith("loss")})
    twins = {h: HELD_OUT_TWIN.get(h, h) for h in held if h not in BASELINES}
    shown = [t for t in twins.values() if any(t in r for r in train)] or ["loss"]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colors = dict(zip(shown, ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")))
    for key in shown:
        points = [(r[x_key], r[key]) for r in train if key in r]
        if not points:
            continue
        x, y = zip(*points)
        width = max(1, len(y) // 10)
        mean = [sum(y[max(0, i - width + 1) : i + 1]) / (i + 1 - max(0, i - width + 1)) for i in range(len(y))]
        ax.plot(x, y, color=colors[key], alpha=0.25, linewidth=0.8)
        ax.plot(x, mean, color=colors[key], label=f"{key}, training (running mean of {width})")
    for key in held:
        points = [(r[x_key], r[f"eval/{key}"]) for r in records if f"eval/{key}" in r and r.get(x_key, 0) > 0]
        if not points:
            continue
        if key in BASELINES:
            ax.plot(*zip(*points), ":", color="#7f7f7f", label=f"{key}, held out: {BASELINES[key]}")
        else:
            color = colors.get(twins[key], "#17becf")
            ax.plot(*zip(*points), "o--", color=color, markersize=4, label=f"{key}, held out")
    ax.set_xscale("log")
    ax.set(
        xlabel="tokens trained on (log scale)" if x_key == "tokens" else "step (log scale)",
        ylabel="loss",
        title=f"{title}: loss" if title else "loss",
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(frameon=False, fontsize=8)
    return _save(fig, path)


def plot_bars(values: dict[str, float], path: str | Path, ylabel: str, title: str) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    names = list(values)
    bars = ax.bar(names, [values[n] for n in names], color=[COLORS.get(n, "#8c564b") for n in names])
    for bar, name in zip(bars, names):
        ax.annotate(
            f"{values[name]:.3f}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=9,
        )
    ax.set(ylabel=ylabel, title=title, ylim=(0, max(1.0, max(values.values()) * 1.15)))
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def plot_parameter_breakdown(breakdown: dict[str, dict[str, int]], path: str | Path) -> Path:
    """Stacked bars: embeddings / encoder / pooler per model (ALBERT's factorization and sharing show)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    names = list(breakdown)
    bottom = [0.0] * len(names)
    for part, color in (("embeddings", "#9ecae1"), ("encoder", "#3182bd"), ("pooler", "#08519c")):
        heights = [breakdown[n].get(part, 0) / 1e6 for n in names]
        ax.bar(names, heights, bottom=bottom, label=part, color=color)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for i, n in enumerate(names):
        ax.annotate(f"{bottom[i]:.2f} M", (i, bottom[i]), ha="center", va="bottom", fontsize=9)
    ax.set(ylabel="parameters (millions)", title="where the parameters are")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def _plot_one_count(lines, path, all_labels: int, title: str, references: set[str], methods: dict[str, str]) -> Path:
    """A single label count: one row per start (its twin under it, dashed), accuracy and interval across."""
    plt = _pyplot()
    names = list(lines)
    fig, ax = plt.subplots(figsize=(9.5, 0.38 * len(names) + 1.4))
    for row, name in enumerate(names):
        count, accuracy, interval = lines[name][0]
        base = name.removesuffix(" (random init)")
        color = "#7f7f7f" if base in references else COLORS.get(base, "#e377c2")
        kw = dict(color=color, marker="s" if base != name else "o", markersize=5, capsize=3, linewidth=1.4)
        xerr = None if interval is None else [[accuracy - interval[0]], [interval[1] - accuracy]]
        bar = ax.errorbar([accuracy], [row], xerr=xerr, **kw)
        if base != name:
            bar[-1][0].set_linestyle("--")
    labels = [f"{n}: {methods[n]}" if n in methods else n for n in names]
    ax.set_yticks(range(len(names)), labels, fontsize=8)
    ax.invert_yaxis()  # the order given, top down
    count = lines[names[0]][0][0]
    shown = f"all ({all_labels})" if count is None else str(count)
    ax.set(xlabel=f"test accuracy at {shown} labelled examples per class (95% bootstrap interval)", title=title)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def plot_label_curve(
    lines: dict[str, list[tuple[int | None, float, list[float] | None]]],
    path: str | Path,
    all_labels: int,
    title: str,
    references: set[str] = frozenset(),
    methods: dict[str, str] | None = None,
) -> Path:
    """Accuracy against labelled examples per class (log axis; None = all, drawn at `all_labels`),
    one line per start: `(labels per class, accuracy, 95% interval or None)` points. A random-init
    twin ("x (random init)") is dashed in its model's colour; `references` (linear baselines) are
    grey and dotted; other starts get colours of their own, none a family's. `methods` names the
    fine-tuning method of a line in its legend entry ("bert: prompt")."""
    plt = _pyplot()
    if len({p[0] for points in lines.values() for p in points}) == 1:  # one count: a line plot would be one column
        return _plot_one_count(lines, path, all_labels, title, references, methods or {})
    fig, ax = plt.subplots(figsize=(9.5, 5.2))
    greys = iter(["#4d4d4d", "#8c8c8c", "#b0b0b0", "#2f2f2f"])
    others = iter(["#e377c2", "#bcbd22", "#393b79", "#637939", "#843c39"])  # none of COLORS' families
    colors: dict[str, str] = {}
    handles = []  # in the order given (matplotlib would list plain lines before error bars)
    for name, points in lines.items():
        points = sorted(points, key=lambda p: all_labels if p[0] is None else p[0])
        xs = [all_labels if p[0] is None else p[0] for p in points]
        ys = [p[1] for p in points]
        base = name.removesuffix(" (random init)")
        if base not in colors:
            colors[base] = COLORS.get(base) or next(greys if base in references else others)
        linestyle = "--" if base != name else ":" if base in references else "-"
        style = dict(
            color=colors[base],
            linestyle=linestyle,
            marker="s" if base != name else "o",
            markersize=4,
            label=f"{name}: {methods[name]}" if methods and name in methods else name,
        )
        if all(p[2] is not None for p in points):
            yerr = [[y - p[2][0] for y, p in zip(ys, points)], [p[2][1] - y for y, p in zip(ys, points)]]
            handles.append(ax.errorbar(xs, ys, yerr=yerr, capsize=3, linewidth=1.4, **style))
        else:
            handles.append(ax.plot(xs, ys, linewidth=1.2, alpha=0.85, **style)[0])
    ax.set_xscale("log")
    ticks = sorted({all_labels if p[0] is None else p[0] for points in lines.values() for p in points})
    ax.set_xticks(ticks, [f"{t} (all)" if t == all_labels else str(t) for t in ticks])
    ax.minorticks_off()
    ax.set(xlabel="labelled examples per class", ylabel="test accuracy (95% bootstrap interval)", title=title)
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, path)
