"""`bertology demo`: does pretraining pay where the seed says it does, with few labels? On the
data that ships here, within a wall-clock budget on the machine at hand (`--budget-minutes`,
default 20; plan.py says how it is spent).

1. trains each family's tokenizer (WordPiece, byte-level BPE, Unigram for ALBERT and XLNet; ELECTRA
   shares BERT's WordPiece) on Debian's long package descriptions (data/debian-descriptions:
   leakage-free for the task's dev and test packages), and word2vec over each tokenizer's pieces;
2. pretrains a tiny model of each family for an equal share of the time with the small-budget
   recipe (stages.small_budget_options), its token embedding started from those word vectors, each with its
   paper's objective (ELECTRA-tiny on BERT-tiny's very wall-clock slot, with BERT's WordPiece:
   the race of equal time, stages.EQUAL_TIME); and the teacher track: the real all-MiniLM-L6-v2
   distilled at the sentence level into the same tiny BERT;
3. fine-tunes every start and each family's random-init twin (same architecture and tokenizer) on
   10, 30, 100 and all 175 labelled examples per class (curve.py: class-balanced nested subsets,
   the method and learning rate chosen on dev, up to 5 seeds ensembled as the budget allows), next
   to bag-of-words, averaged word2vec vectors and MiniLM's frozen embeddings, each with a logistic
   regression on the same subsets; every gain comes with a paired-bootstrap 95% interval over the
   test items;
4. writes runs/demo/report.md (tables, label curve, pretraining curves, parameters, attention maps)
   and runs/demo/results.json (one object per model, a `label_curve` in each).

`--quick` is a smoke test (about two minutes); Ctrl-C checkpoints, and `--resume` continues the same
budget (out/demo_budget.json keeps the seconds spent). Each stage checks the clock and cuts what is left
(shorter pretraining slots, fewer seeds, methods, label counts: plan.py); the report lists every cut.
`--device` runs every stage on a GPU (auto takes one when there is one): batches grow and the
model size is chosen by a throughput probe (probe.py, plan.choose_preset); the report says which
device, preset and how many pretraining tokens.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from .curve import Start, label_curves, twin
from .plan import REPORT_RESERVE_S, Budget, Plan, label_name
from .report import reference_lines, wall_time, write_report
from .stages import (
    CORPORA,
    EQUAL_TIME,
    FAMILIES,
    corpus_files,
    data_path,
    minilm_path,
    pretrain_one,
    small_budget_options,
    teacher_track,
    train_tokenizers,
)

__all__ = ["CORPORA", "run", "small_budget_options"]
WORD2VEC_EPOCHS = 2  # passes of skip-gram over the corpus for each tokenizer's pieces (bench/few_labels.py took 3)
STUDENT = "minilm→tiny"  # the teacher track's student
BUDGET_FILE = "demo_budget.json"  # the seconds spent and the cuts made, kept for --resume
MIN_SLOT_S = 1.0  # the least training a model gets beyond its setup, however late it starts: a few steps
# a model's setup (its token store read, its index built, the model made) before one is measured: a slot shorter
# than its setup trains nothing, and the command refuses (train/budget.py's BudgetSpent)
FIRST_SETUP_S = 5.0


def say_to(quiet: bool):
    def say(message: str) -> None:
        if not quiet:
            print(message, flush=True)

    return say


def claim_demo_dir(out: Path, resume: bool, overwrite: bool) -> None:
    """The demo writes only into a directory of its own: a fresh run clears the stages an earlier
    demo wrote there; a directory of the user's is refused (or, with --overwrite, written into
    without deleting anything)."""
    from ..io import RUN_MARKER, atomic_write_json, claim_output_dir

    report = out / "report.md"
    earlier = report.is_file() and report.read_text(encoding="utf-8").startswith("# bertology demo report")
    if earlier and not (out / RUN_MARKER).is_file():  # a demo from before output directories were marked
        atomic_write_json(out / RUN_MARKER, {"command": "demo"})
    ours = (out / RUN_MARKER).is_file()
    claim_output_dir(out, "demo", resume=resume and ours, overwrite=overwrite or ours)
    if ours and not resume:
        for stage in ("tokenizers", "wordvec", "pretrain", "finetune", "distill", "corpus", "cache"):
            shutil.rmtree(out / stage, ignore_errors=True)


def methods_of(family) -> tuple[str, ...]:
    """The fine-tuning methods a family's start offers, chosen among on dev: a new head always; the
    pretrained head through a prompt where the family has one; a probe where mean pooling applies."""
    return ("head",) + (("prompt",) if family.prompts else ()) + (() if family.summary_head else ("probe",))


def word_vectors(out: Path, plan: Plan, corpus: list[Path], resume: bool, say) -> dict[str, Path]:
    """{family: word2vec (skip-gram) vectors over its tokenizer's own pieces, as wide as its token
    embedding}: one training per distinct tokenizer and width (ELECTRA shares BERT's)."""
    from ..data.tokenstore import sentence_ids
    from ..models import get_family
    from ..models.init_embeddings import embedding_size
    from ..wordvec.options import TrainOptions
    from ..wordvec.train import train

    paths: dict[str, Path] = {}
    trained: dict[tuple[bytes, int], Path] = {}
    for family in FAMILIES:
        tokenizer = out / "tokenizers" / family / "tokenizer.json"
        width = embedding_size(get_family(family).preset(plan.preset))
        key = (tokenizer.read_bytes(), width)
        if key in trained:
            paths[family] = trained[key]
            continue
        path = paths[family] = trained[key] = out / "wordvec" / f"{family}-pieces.txt"
        if resume and path.is_file():
            continue
        t0 = time.perf_counter()
        _, summary = train(
            TrainOptions(
                corpus=[str(c) for c in corpus],
                out=str(path),
                algorithm="skipgram",
                vector_size=width,
                tokenizer=str(tokenizer),
                epochs=1 if plan.quick else WORD2VEC_EPOCHS,
                workers=2,
                quiet=True,
            ),
            sentence_ids,  # the token store each family's pretraining then reads
        )
        say(
            f"   word2vec (skip-gram) over {family}'s pieces: {summary['vocabulary']:,} pieces × {width} dimensions "
            f"({time.perf_counter() - t0:.1f} s)"
        )
    return paths


def reference_lines_once(out: Path, counts: list, vectors: Path, budget: Budget, resume: bool, say) -> dict:
    """The reference lines at `counts` (kept in out/references.json: a resumed run reports the same ones).
    The frozen MiniLM line, a 22M-parameter encoder over every test text, is cut when the budget is spent."""
    from ..io import atomic_write_json

    file = out / "references.json"
    kept = json.loads(file.read_text(encoding="utf-8")) if resume and file.is_file() else {}
    if kept and all(set(line) == {label_name(c) for c in counts} for line in kept.values()):
        return kept
    encoder = budget.left() > 0
    if not encoder:
        say("   cut " + budget.cut("the MiniLM embeddings (frozen) reference line", "the budget was spent"))
    lines = reference_lines(counts, vectors, out / "tokenizers" / "bert" / "tokenizer.json", say, encoder=encoder)
    atomic_write_json(file, lines)
    return lines


def run(args) -> int:
    from ..hardware import resolve_device
    from ..options import DeviceOptions

    out = Path(args.out)
    say = say_to(args.quiet)
    minilm_path()  # the teacher track's teacher: missing, it fails now rather than after the pretraining
    device = resolve_device(DeviceOptions(args.device).device, say)  # a GPU that is not there: before any write
    minutes = 1.5 if args.quick and args.budget_minutes is None else args.budget_minutes or 20.0
    # from when the command began (its imports are seconds on a busy machine), read before claim_demo_dir's write
    budget = Budget.resumed(60 * minutes, out / BUDGET_FILE, args.resume, started=getattr(args, "started", None))
    claim_demo_dir(out, args.resume, args.overwrite)
    if budget.before:
        say(f"resuming: {budget.before / 60:.1f} of the {minutes:g} minutes were spent by the interrupted run")
    try:
        with token_cache(out / "cache"):
            return run_stages(args, out, device, budget, say)
    finally:
        budget.checkpoint()  # an interrupted or failed run's time counts when it is resumed


@contextmanager
def token_cache(default: Path):
    """The corpus tokenized once per tokenizer for every stage (word2vec over its pieces, each
    family's pretraining, ELECTRA with BERT's tokenizer): $BERTOLOGY_TOKEN_CACHE, the user's own where
    set, else `default`, for the demo's duration."""
    from ..data.tokenstore import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = before or str(default)
    try:
        yield
    finally:
        if before is None:
            del os.environ[CACHE_ENV]


def run_stages(args, out: Path, device, budget: Budget, say) -> int:
    import torch

    from ..hardware import cpu_summary, precision_probe, precision_reason
    from ..models import get_family
    from ..tasks.forward import inference_dtype

    if device.type == "cuda":
        bf16 = not args.fp32 and inference_dtype(device) == torch.bfloat16
        where = f"{torch.cuda.get_device_name(device)} ({device})"
        precision = "fp32 (--fp32)" if args.fp32 else f"{'bf16' if bf16 else 'fp16'} autocast (this GPU's)"
    else:
        bf16 = not args.fp32 and bool(precision_probe()["bf16_pays"])
        where, precision = cpu_summary(), "fp32 (--fp32)" if args.fp32 else precision_reason()
    plan = Plan.make(args.quick, bf16=bf16, device=str(device))
    models_of = "models sized by a throughput probe" if plan.probes_presets else f"{plan.preset} models"
    say(
        f"bertology demo → {out}  (budget {budget.seconds / 60:g} min{', quick' if args.quick else ''}: {models_of}, "
        f"{plan.batch_size} × {plan.seq_len} tokens a step, {'bf16' if plan.bf16 else 'fp32'})\n   "
        f"{where}\n   precision: {precision}"
    )
    resume_hint = (
        "continue with: bertology demo --resume"
        + (" --quick" if args.quick else "")
        + (f" --out {out}" if str(out) != "runs/demo" else "")
    )

    corpus = corpus_files(out, plan.corpus_bytes)
    say("\n1/4 tokenizers and word vectors, trained on data/debian-descriptions")
    rows = train_tokenizers(out, plan, corpus, args.resume, say)
    slots = len(FAMILIES) + 1  # every family and the teacher track's student
    if plan.probes_presets:
        from .probe import sized_plan

        say(f"   throughput probe on {device}: a few pretraining steps of each candidate preset")
        seconds = plan.pretrain_share * max(0.0, budget.left() - REPORT_RESERVE_S) / slots
        plan = sized_plan(plan, out, seconds, args.resume, say)
    vectors = word_vectors(out, plan, corpus, args.resume, say)
    budget.checkpoint()

    # every family starts its token embedding from word2vec over its own pieces, then trains its own objective
    models = [(f, f, {"init_embeddings": str(vectors[f])}) for f in FAMILIES]
    pretraining_s = plan.pretrain_share * max(0.0, budget.left() - REPORT_RESERVE_S)
    # the teacher track's share is set aside first: the families' slots (and ELECTRA's race of BERT's seconds,
    # which can overrun its share) are planned from the rest, so the last model is never left the crumbs
    student_s = max(MIN_SLOT_S, pretraining_s / (len(models) + 1))
    started = budget.spent()
    say(f"\n2/4 pretraining, {student_s:.0f} s of wall time for each of {len(models) + 1} models")
    setups: list[float] = []  # each model's seconds before its first step (its token store, index, loading)
    shortened: list[str] = []  # the models whose slot the clock cut below an equal share

    def slot(name: str, models_left: int) -> float:
        """Wall-clock seconds of the next model's whole pretraining (its --time-budget bounds setup, training and
        the final save): an equal share of what is left, and at least the longest setup measured so far plus a
        few steps. A stage that ran long (a busy machine) shortens the slots after it, never fine-tuning's share."""
        share = (pretraining_s - student_s - (budget.spent() - started)) / models_left
        seconds = max(max(setups, default=FIRST_SETUP_S) + MIN_SLOT_S, share)
        if share < 0.9 * student_s and student_s > MIN_SLOT_S:
            shortened.append(f"{name} {seconds:.0f} s")
        return seconds

    for i, (name, family, extra) in enumerate(models):
        partner = rows.get(EQUAL_TIME.get(name), {})
        seconds = partner["time_budget_s"] if "time_budget_s" in partner else slot(name, len(models) - i)
        row = pretrain_one(name, family, out, plan, corpus, seconds, args.resume, say, **extra)
        if row is None:
            print(f"interrupted during {name} pretraining; {resume_hint}")
            return 130
        rows[name] = {**rows[family], **row}
        setups.append(row["setup_s"])
        budget.checkpoint()
    if shortened:
        say(
            "   cut "
            + budget.cut(
                f"pretraining slots shortened ({', '.join(shortened)}; an equal share was {student_s:.0f} s)",
                "the stages before them took longer than planned",
            )
        )
    student = teacher_track(out, plan, corpus, student_s, args.resume, say)
    if student is None:
        print(f"interrupted during the teacher track; {resume_hint}")
        return 130
    budget.checkpoint()

    say(
        f"\n3/4 fine-tuning on data/debian-sections (description → one of 10 sections) with few and all labels, "
        f"the first {plan.finetune_length} tokens of each description; {budget.left():.0f} s of the budget left"
    )
    pretrained = out / "pretrain"
    starts = []
    for family in FAMILIES:
        pooling = "cls" if get_family(family).summary_head else "mean"  # XLNet's head is its own summary
        methods = methods_of(get_family(family))
        starts += [
            Start(family, pretrained / family, pooling=pooling, methods=methods),
            # a random-init twin has no learned head to prompt nor features to probe: a new head, at its own best rate
            Start(twin(family), pretrained / family, from_scratch=True, pooling=pooling),
        ]
    starts.append(Start(STUDENT, out / "distill" / "minilm", methods=("head", "probe")))  # no MLM head
    curves = label_curves(starts, plan, budget, data_path("debian-sections"), out / "finetune", args.resume, say)
    counts = [c for c in plan.label_counts if label_name(c) in curves[starts[0].name]]
    references = reference_lines_once(out, counts, vectors["bert"], budget, args.resume, say)

    say("\n4/4 report")
    report = write_report(out, plan, rows, student, curves, references, budget)
    print("\n" + report["table"])
    print(
        f"\nreport: {report['path']} (+ {len(report['images'])} plots); results: {out / 'results.json'}; "
        f"wall time {wall_time(budget)}; {plan.preset} models on {plan.device}, {report['tokens']:,} pretraining tokens"
        + "".join(f"\n   cut {line}" for line in budget.cuts)
    )
    return 0
