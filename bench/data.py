"""From a corpus of real size to the first training step: bertology against the reference at each stage.

    python bench/data.py                 # a 300 MB corpus (about 10 minutes on 2 cores)
    python bench/data.py --mb 3000       # 3 GB (about ten times as long)
    python bench/data.py --mb 20         # a quick check

The corpus is generated, deterministically (--seed), in Google's lines format (a sentence a line, a
blank line between documents, about 9 sentences a document): words drawn by Zipf's law (p ∝ 1/rank)
over a real lexicon, the distinct words of the project's data/wiki.txt ranked by their frequency
there, and with probability --new-share a made-up word (syllables spelling a number drawn by a
Zipf law of exponent 1.5 over all numbers), so that distinct words keep growing with the corpus
as in real text. It is written once under /tmp/bertology-bench-data and reused.

Each stage runs in a fresh process; its wall time and its peak memory are measured from outside,
sampled every 0.2 s: the sum of the RSS of the process and its children (a page that forked workers
share with their parent counts once per process), and the sum of their PSS (Linux's proportional
set size: a shared page split between the processes that map it, so the tree's memory counted once):
  1. tokenizer training (bert's WordPiece, vocab 30,000): ours vs HF tokenizers' WordPieceTrainer;
  2. tokenizing the corpus: ours (data.tokenize_corpus: the token store, worker processes) vs HF
     tokenizers' encode_batch on the same tokenizer.json (ours), 10,000 lines a call, all cores;
  3. `bertology pretrain --family bert --preset tiny` with that tokenizer, from start to its first
     optimizer step (the first line of metrics.jsonl, --log-every 1), then the same command into a
     second output directory: the token store and the instance index are shared ($BERTOLOGY_TOKEN_CACHE),
     so the second run reads them; the disk of the token store and of the instance indices, and the
     first run's time to its first step over the tokenizing stage's time (issue #43: <= 1.1x).
The machine is shared: the load average is printed beside the numbers, and ours and the reference
run one after the other in the same invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

# keep this folder off sys.path: bench/data.py must not shadow anything named `data`
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402
import psutil  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORK = Path(os.environ.get("BERTOLOGY_BENCH_DATA", "/tmp/bertology-bench-data"))
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["ar", "en", "ol", "us", "ith", "ex"]


# ---- the corpus -------------------------------------------------------------------------------------


def lexicon() -> list[str]:
    """The distinct words of data/wiki.txt, most frequent first (ties in alphabetical order)."""
    counts = Counter(re.findall(r"[a-z][a-z'-]*[a-z]|[a-z]", (ROOT / "data" / "wiki.txt").read_text().lower()))
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def made_up(n: int) -> str:
    """A made-up word for the number n ≥ 0: its digits in base len(SYLLABLES), one syllable each."""
    out = []
    while True:
        n, d = divmod(n, len(SYLLABLES))
        out.append(SYLLABLES[d])
        if n == 0:
            return "".join(out)


def generate(path: Path, mb: int, seed: int, new_share: float) -> None:
    """Write a corpus of `mb` megabytes to `path` (atomically; the module docstring says how)."""
    words = lexicon()
    rank_p = 1.0 / np.arange(1, len(words) + 1)
    cumulative = np.cumsum(rank_p / rank_p.sum())
    rng = np.random.default_rng(seed)
    invented: dict[int, str] = {}
    target = mb * 1_000_000
    tmp = path.with_suffix(".tmp")
    written = 0
    with open(tmp, "w", encoding="utf-8") as f:
        while written < target:
            n_words = 1_000_000
            ranks = np.minimum(np.searchsorted(cumulative, rng.random(n_words)), len(words) - 1)
            fresh = rng.random(n_words) < new_share
            numbers = rng.zipf(1.5, n_words)
            text = [
                invented.setdefault(int(k), made_up(int(k))) if new else words[r]
                for r, new, k in zip(ranks.tolist(), fresh.tolist(), numbers.tolist())
            ]
            lengths = rng.integers(6, 40, size=n_words // 10)  # words a sentence (mean ~22)
            per_doc = 1 + rng.poisson(8, size=len(lengths))  # sentences a document (mean ~9)
            lines, at, s = [], 0, 0
            for doc_sentences in per_doc.tolist():  # as many whole documents as the words drawn make
                if s + doc_sentences > len(lengths) or at + int(lengths[s : s + doc_sentences].sum()) > n_words:
                    break
                for _ in range(doc_sentences):
                    sentence = text[at : at + lengths[s]]
                    at, s = at + int(lengths[s]), s + 1
                    sentence[0] = sentence[0].capitalize()
                    lines.append(" ".join(sentence) + ".")
                lines.append("")
            chunk = "\n".join(lines) + "\n"
            f.write(chunk)
            written += len(chunk.encode())
    os.replace(tmp, path)


def corpus_stats(path: Path) -> dict:
    lines = docs = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                lines += 1
            else:
                docs += 1
    return {"mb": path.stat().st_size / 1e6, "lines": lines, "documents": docs}


# ---- the stages, each run in a fresh process ----------------------------------------------------------


def stage_train_ours(corpus: str, out: str) -> None:
    from bertology.tokenizers import train

    train(files=[corpus], family="bert", vocab_size=30000, show_progress=False).save(Path(out) / "tokenizer.json")


def stage_train_hf(corpus: str, out: str) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train([corpus], trainers.WordPieceTrainer(vocab_size=30000, special_tokens=specials, show_progress=False))
    tok.save(str(Path(out) / "tokenizer.json"))


def stage_tokenize_ours(corpus: str, tokenizer: str, out: str) -> None:
    from bertology.data.tokenized import tokenize_corpus
    from bertology.tokenizers import Tokenizer

    c = tokenize_corpus([corpus], Tokenizer.load(tokenizer), out, show_progress=True)
    print(json.dumps({"tokens": c.num_tokens, "documents": c.num_documents}))


def stage_tokenize_hf(corpus: str, tokenizer: str, out: str) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer)
    tok.no_padding()
    tok.no_truncation()
    tokens, batch = 0, []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                batch.append(line.strip())
            if len(batch) == 10_000:
                tokens += sum(len(e.ids) for e in tok.encode_batch(batch, add_special_tokens=False))
                batch = []
    tokens += sum(len(e.ids) for e in tok.encode_batch(batch, add_special_tokens=False))
    print(json.dumps({"tokens": tokens}))


STAGES = {
    "train-ours": stage_train_ours,
    "train-hf": stage_train_hf,
    "tokenize-ours": stage_tokenize_ours,
    "tokenize-hf": stage_tokenize_hf,
}


def measure(command: list[str], env: dict | None = None, until=None, log: Path | None = None) -> dict:
    """Run `command`; its wall time and peak tree RSS (GB). `until()` true ends it early (killed), the
    time then being the time until() first held."""
    started = time.perf_counter()
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=out, stderr=subprocess.STDOUT)
    ps, peak, peak_pss, reached = psutil.Process(proc.pid), 0, 0, None
    while proc.poll() is None:
        try:
            tree = [ps, *ps.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree))
            peak_pss = max(peak_pss, sum(pss(p.pid) for p in tree))
        except psutil.Error:
            pass
        if until is not None and until():
            reached = time.perf_counter() - started
            proc.kill()  # our own child, by its pid
            proc.wait()
            break
        time.sleep(0.2)
    wall = time.perf_counter() - started
    if log:
        out.close()
    if proc.returncode not in (0, None) and reached is None:
        tail = log.read_text()[-3000:] if log else ""
        raise RuntimeError(f"{' '.join(command[:4])} … failed ({proc.returncode}):\n{tail}")
    return {"s": reached if reached is not None else wall, "peak_gb": peak / 1e9, "pss_gb": peak_pss / 1e9}


def pss(pid: int) -> int:
    """The process's proportional set size in bytes (0 where the kernel does not say)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:")), 0)
    except OSError:
        return 0


def disk_mb(path: Path, pattern: str = "*") -> float:
    return sum(f.stat().st_size for d in path.glob(pattern) for f in d.rglob("*") if f.is_file()) / 1e6


def first_step_reached(out: Path):
    metrics = out / "metrics.jsonl"

    def reached() -> bool:
        return metrics.is_file() and any('"loss"' in line for line in metrics.read_text().splitlines())

    return reached


# ---- the run ------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=300, help="corpus size in MB (default 300; 3000 for the large run)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--new-share", type=float, default=0.02, help="share of made-up words (default 0.02)")
    ap.add_argument(
        "--only",
        default="train,tokenize,pretrain",
        help="stages to run (comma-separated): train, tokenize, pretrain; tokenize-ours: our tokenizing alone",
    )
    ap.add_argument("--tokenizer", help="a tokenizer.json to use instead of training one (with --only without train)")
    ap.add_argument("--stage", help=argparse.SUPPRESS)  # a stage in this fresh process (internal)
    ap.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.stage:
        STAGES[a.stage](*a.args)
        return

    from bertology.hardware import cpu_name_and_flags

    WORK.mkdir(parents=True, exist_ok=True)
    corpus = WORK / f"corpus-{a.mb}mb-seed{a.seed}-new{a.new_share:g}.txt"
    cpu = cpu_name_and_flags()[0]
    print(f"CPU: {cpu}, {psutil.cpu_count()} logical cores; memory {psutil.virtual_memory().total / 1e9:.1f} GB")

    def load() -> str:
        return "load %.1f %.1f %.1f" % os.getloadavg()

    if not corpus.exists():
        t = time.perf_counter()
        generate(corpus, a.mb, a.seed, a.new_share)
        print(f"generated {corpus} in {time.perf_counter() - t:.0f} s")
    stats = corpus_stats(corpus)
    print(f"corpus: {stats['mb']:.0f} MB, {stats['lines']:,} lines, {stats['documents']:,} documents ({load()})")
    run = Path(tempfile.mkdtemp(prefix="run-", dir=WORK))
    me = [sys.executable, str(Path(__file__).resolve()), "--stage"]
    steps = a.only.split(",")
    rows = []
    ours_tok = Path(a.tokenizer) if a.tokenizer else run / "ours" / "tokenizer.json"
    (run / "ours").mkdir()
    (run / "hf").mkdir()

    if "train" in steps or not a.tokenizer:  # (the tokenizer the other stages use)
        ours = measure([*me, "train-ours", str(corpus), str(run / "ours")])
        load_ours = load()
        hf = measure([*me, "train-hf", str(corpus), str(run / "hf")])
        rows.append(("tokenizer training, WordPiece 30k", ours, hf, "HF WordPieceTrainer", load_ours, load()))

    if "tokenize" in steps or "tokenize-ours" in steps:
        log = run / "tokenize-ours.log"
        ours = measure([*me, "tokenize-ours", str(corpus), str(ours_tok), str(run / "store")], log=log)
        load_ours = load()
        got = json.loads(log.read_text().strip().splitlines()[-1])
        hf = None
        if "tokenize" in steps:
            hf_log = run / "tokenize-hf.log"
            hf = measure([*me, "tokenize-hf", str(corpus), str(ours_tok), str(run / "none")], log=hf_log)
            ref = json.loads(hf_log.read_text().strip().splitlines()[-1])
            if got["tokens"] != ref["tokens"]:
                print(f"!! tokens differ: ours {got['tokens']:,}, HF {ref['tokens']:,}")
        rows.append(("tokenizing (token store)", ours, hf, "HF encode_batch", load_ours, load()))
        store = disk_mb(run / "store", "tokens-*")
        print(
            f"token store: {store:.0f} MB for {got['tokens']:,} pieces = "
            f"{store * 1e6 / got['tokens']:.2f} bytes a piece (ids, word-start bits, offsets)"
        )
        print("ours' progress lines:\n" + textwrap.indent(log.read_text().strip(), "    "))

    first_step = None
    if "pretrain" in steps:
        env = {"BERTOLOGY_TOKEN_CACHE": str(run / "shared-tokens"), "OMP_NUM_THREADS": "1"}
        for name in ("first run", "second run (token store reused)"):
            out = run / ("pretrain-1" if name == "first run" else "pretrain-2")
            command = [
                *[sys.executable, "-m", "bertology", "pretrain"],
                *["--family", "bert", "--preset", "tiny", "--corpus", str(corpus), "--tokenizer", str(ours_tok)],
                *["--out", str(out), "--steps", "100000", "--log-every", "1", "--device", "cpu"],
            ]
            m = measure(command, env, until=first_step_reached(out), log=run / f"{out.name}.log")
            first_step = first_step if first_step is not None else m["s"]
            print(
                f"pretrain, {name}: first optimizer step after {m['s']:.0f} s, peak RSS {m['peak_gb']:.2f} GB "
                f"(tree sum), peak PSS {m['pss_gb']:.2f} GB ({load()})"
            )
            print(textwrap.indent((run / f"{out.name}.log").read_text().strip()[-1500:], "    "))
        shared = run / "shared-tokens"
        tokens_mb, index_mb = disk_mb(shared, "tokens-*"), disk_mb(shared, "instances-*")
        print(
            f"shared by the runs ($BERTOLOGY_TOKEN_CACHE): token store {tokens_mb:.0f} MB, "
            f"instance indices (training + held-out) {index_mb:.1f} MB = {100 * index_mb / tokens_mb:.2f}% of the store"
        )
        tokenized = next((ours for stage, ours, *_ in rows if stage.startswith("tokenizing")), None)
        if tokenized is not None:
            print(
                f"first run's first step / tokenizing stage: {first_step:.0f} s / {tokenized['s']:.0f} s = "
                f"{first_step / tokenized['s']:.2f}x ({load()})"
            )

    print()
    print(f"{'stage':36} {'ours':>16} {'reference':>16} {'ratio':>7}  reference (peak: RSS of the tree)")
    for stage, ours, ref, what, l1, l2 in rows:
        o = f"{ours['s']:.0f} s {ours['peak_gb']:.2f} GB"
        if ref is None:
            print(f"{stage:36} {o:>16} {'(not run)':>16}          ({l1})")
            print(f"{'':36} {stats['mb'] / ours['s']:13.2f} MB/s")
            continue
        r = f"{ref['s']:.0f} s {ref['peak_gb']:.2f} GB"
        print(f"{stage:36} {o:>16} {r:>16} {ref['s'] / ours['s']:6.2f}x  {what} ({l1} / {l2})")
        if stage.startswith("tokenizing"):
            print(f"{'':36} {stats['mb'] / ours['s']:13.2f} MB/s {stats['mb'] / ref['s']:13.2f} MB/s")
    print(f"(ratio: the reference's time over ours, > 1 = ours faster; scratch files under {run})")
    if os.environ.get("BENCH_KEEP") != "1":
        shutil.rmtree(run / "store", ignore_errors=True)


if __name__ == "__main__":
    main()
