"""Tokenizer training and encoding: bertology vs Hugging Face `tokenizers` and `sentencepiece`.

    python bench/tokenizers.py            # >= 13 MB of real text, vocab 30,000 (a few minutes)
    python bench/tokenizers.py --small    # 1 MB, vocab 8,000: a quick check
    python bench/tokenizers.py --unigram-100mb   # Unigram training memory on a 100 MB corpus

Corpus: the English Wikipedia extract that ships with gensim (wikitext stripped to prose) plus
the reStructuredText sources of the Python 3.11 documentation (Debian's python3.11-doc, fetched
with `apt-get download` into ~/.cache/bertology-bench on first use). Every 20th line is held out
for the compression numbers.

One run measures, each training in a fresh process (so peak RSS is its own):
  * training time, ours vs tokenizers, for byte-level BPE and WordPiece (goal <= 3x) and for
    Unigram vs tokenizers and sentencepiece (goal <= 1x sentencepiece);
  * batch encoding throughput (MB/s) of the trained WordPiece and byte-level BPE tokenizers;
  * compression, tokens per whitespace word on held-out text (goal: within 1% of the peers);
  * WordPiece by likelihood (the definition) vs WordPiece as BPE (what tokenizers trains);
  * peak resident memory while training, next to the peers'.
The peers use both cores (rayon / sentencepiece threads); ours runs on one (two while counting
words). Unigram pipelines are alike on both sides: NFKC, whitespace runs as one space and none at
the ends (sentencepiece's default normalization does the same), Metaspace.

--unigram-100mb: a 100 MB file assembled from the corpora that ship with the project and gensim
(data/wiki.txt, data/debian-descriptions, gensim's Wikipedia extract, Crime and Punishment and the
Lee corpus), their lines repeated in a new shuffled order each pass until 100 MB; Unigram training
(vocab 30,000) by bertology and by sentencepiece, time and peak RSS each (goal: ours < 2 GB).
"""

from __future__ import annotations

import argparse
import bz2
import glob
import html
import json
import multiprocessing as mp
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# This file is called tokenizers.py: keep its folder off sys.path, or `import tokenizers` finds it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

CACHE = Path(os.environ.get("BERTOLOGY_BENCH_CACHE", Path.home() / ".cache" / "bertology-bench"))
DOC_GLOB = "doc/usr/share/doc/python3.11/html/_sources/**/*.txt"


# -- corpus ----------------------------------------------------------------------------------------


def wikipedia_text() -> str:
    import gensim

    path = (
        Path(gensim.__file__).parent
        / "test"
        / "test_data"
        / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
    )
    xml = bz2.open(path).read().decode("utf-8")
    out = []
    for text in re.findall(r"<text[^>]*>(.*?)</text>", xml, flags=re.S):
        text = html.unescape(text)
        text = re.sub(r"<ref[^>]*/>|<ref.*?</ref>|<!--.*?-->", "", text, flags=re.S)
        for _ in range(2):  # nested templates, innermost first
            text = re.sub(r"\{\{[^{}]*\}\}", "", text)
        text = re.sub(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", text)  # [[target|label]] -> label
        text = re.sub(r"'{2,}", "", text)  # bold / italics quotes
        for line in text.split("\n"):
            line = line.strip()
            if line and line[0] not in "{|}!*#:=<[":  # tables, lists, headings, leftovers
                out.append(line)
    return "\n".join(out) + "\n"


def python_docs_text() -> str:
    files = sorted(glob.glob(str(CACHE / DOC_GLOB), recursive=True))
    if not files:
        CACHE.mkdir(parents=True, exist_ok=True)
        print(
            f"[corpus] fetching Debian's python3.11-doc into {CACHE} (apt-get download + dpkg-deb -x)", file=sys.stderr
        )
        try:
            subprocess.run(
                ["apt-get", "download", "python3.11-doc"],
                cwd=CACHE,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deb = sorted(CACHE.glob("python3.11-doc_*.deb"))[-1]
            subprocess.run(["dpkg-deb", "-x", str(deb), str(CACHE / "doc")], check=True)
        except (OSError, subprocess.CalledProcessError, IndexError) as e:
            sys.exit(
                f"[corpus] could not fetch python3.11-doc ({e}); download it by hand:\n"
                f"  cd {CACHE} && apt-get download python3.11-doc && dpkg-deb -x python3.11-doc_*.deb doc"
            )
        files = sorted(glob.glob(str(CACHE / DOC_GLOB), recursive=True))
    return "".join(Path(p).read_text(encoding="utf-8") for p in files)


def build_corpus(small: bool) -> tuple[Path, Path, int]:
    """(train file, held-out file, train bytes)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tag = "small" if small else "full"
    train_p, held_p = CACHE / f"train-{tag}.txt", CACHE / f"heldout-{tag}.txt"
    if not (train_p.is_file() and held_p.is_file()):
        lines = (wikipedia_text() + python_docs_text()).splitlines(keepends=True)
        if small:  # a slice of each source
            lines = lines[:1500] + lines[-6000:]
        train = [line for i, line in enumerate(lines) if i % 20 != 19]
        held = [line for i, line in enumerate(lines) if i % 20 == 19]
        train_p.write_text("".join(train), encoding="utf-8")
        held_p.write_text("".join(held), encoding="utf-8")
    return train_p, held_p, train_p.stat().st_size


# -- training jobs, each run in a fresh process ----------------------------------------------------

SPECIALS = {
    "bert": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    "unigram": ["<unk>"],
}


def job_ours(kind: str, train_file: str, vocab: int, out: str):
    from bertology.tokenizers import train

    kw = {
        "wordpiece-freq": dict(family="bert", criterion="frequency"),
        "wordpiece-lik": dict(family="bert", criterion="likelihood"),
        "bytelevel-bpe": dict(family="roberta"),
        "unigram": dict(algorithm="unigram"),
    }[kind]
    tok = train([train_file], vocab_size=vocab, min_frequency=2, show_progress=False, **kw)
    tok.save(out)


def job_hf(kind: str, train_file: str, vocab: int, out: str):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if kind == "wordpiece-freq":
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tr = trainers.WordPieceTrainer(
            vocab_size=vocab, min_frequency=2, special_tokens=SPECIALS["bert"], show_progress=False
        )
    elif kind == "bytelevel-bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tr = trainers.BpeTrainer(
            vocab_size=vocab,
            min_frequency=2,
            special_tokens=SPECIALS["roberta"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    elif kind == "unigram":
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.Sequence(
            [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " "), normalizers.Strip()]
        )  # as ours (and sentencepiece's)
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        tr = trainers.UnigramTrainer(
            vocab_size=vocab, special_tokens=SPECIALS["unigram"], unk_token="<unk>", show_progress=False
        )
    else:
        raise ValueError(kind)
    tok.train([train_file], tr)
    tok.save(out)


def job_spm(kind: str, train_file: str, vocab: int, out: str):
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=train_file,
        model_prefix=out.removesuffix(".model"),
        vocab_size=vocab,
        model_type="unigram",
        character_coverage=1.0,
        max_sentence_length=1 << 16,
        num_threads=os.cpu_count() or 1,
        minloglevel=2,
    )


PRELOAD = {"job_ours": "bertology.tokenizers.training", "job_hf": "tokenizers", "job_spm": "sentencepiece"}


def peak_rss_mib(field: str = "VmHWM") -> float:
    """VmHWM: this process's own high-water mark (ru_maxrss would include the parent's, kept
    across fork + exec); VmRSS: the current resident size."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(fn, args, q):
    import importlib

    importlib.import_module(PRELOAD[fn.__name__])  # imports are not training time
    base = peak_rss_mib("VmRSS")
    t = time.perf_counter()
    try:
        fn(*args)
        err = None
    except BaseException as e:  # reported to the parent, which prints it
        err = f"{type(e).__name__}: {e}"
    seconds = time.perf_counter() - t
    q.put((seconds, peak_rss_mib(), base, err))


def measure(fn, *args) -> tuple[float, float]:
    """(seconds, peak RSS MiB, RSS after imports MiB) of fn(*args) in a fresh interpreter."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(fn, args, q))
    p.start()
    seconds, rss, base, err = q.get()
    p.join()
    if err:
        raise RuntimeError(f"{fn.__name__}{args[:1]}: {err}")
    return seconds, rss, base


# -- encoding and compression ----------------------------------------------------------------------


def throughput(encode_batch, lines: list[str], n_bytes: int, batch: int = 1000) -> float:
    t = time.perf_counter()
    for i in range(0, len(lines), batch):
        encode_batch(lines[i : i + batch])
    return n_bytes / 1e6 / (time.perf_counter() - t)


def tokens_per_word(count_tokens, lines: list[str]) -> float:
    words = sum(len(line.split()) for line in lines)
    return sum(count_tokens(line) for line in lines) / words


def corpus_100mb(target: int = 100 * 10**6, seed: int = 0) -> Path:
    """The shipped corpora's lines, each pass in a new shuffled order, until `target` bytes."""
    import lzma
    import random
    import gensim

    path = CACHE / "unigram-100mb.txt"
    if path.is_file() and path.stat().st_size >= target:
        return path
    root = Path(__file__).resolve().parent.parent / "data"
    gensim_data = Path(gensim.__file__).parent / "test" / "test_data"
    lines = (root / "wiki.txt").read_text(encoding="utf-8").splitlines()
    lines += lzma.open(root / "debian-descriptions" / "descriptions.txt.xz", "rt", encoding="utf-8").read().splitlines()
    lines += wikipedia_text().splitlines()
    for name in ("crime-and-punishment.txt", "lee_background.cor"):
        lines += (gensim_data / name).read_text(encoding="utf-8").splitlines()
    lines = [line for line in lines if line.strip()]
    rng, size = random.Random(seed), 0
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            rng.shuffle(lines)
            for line in lines:
                f.write(line + "\n")
                size += len(line.encode("utf-8")) + 1
                if size >= target:
                    break
    return path


def unigram_memory(vocab: int) -> None:
    """Unigram training on 100 MB: time and peak RSS, ours and sentencepiece's, each in a fresh process."""
    path = corpus_100mb()
    print(
        f"corpus: {path} ({path.stat().st_size / 1e6:.1f} MB: the shipped corpora, repeated in shuffled "
        f"order), vocab {vocab}, {os.cpu_count()} CPUs"
    )
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-tok-") as d:
        for who, fn in [("ours", job_ours), ("sentencepiece", job_spm)]:
            out = str(Path(d) / f"unigram-{who}.{'model' if who == 'sentencepiece' else 'json'}")
            rows[who] = measure(fn, "unigram", str(path), vocab, out)
            print(f"  trained unigram {who:13s} {rows[who][0]:7.1f} s  peak RSS {rows[who][1]:7.0f} MiB", flush=True)
    (t, m, _), (pt, pm, _) = rows["ours"], rows["sentencepiece"]
    print(
        f"\n== Unigram on 100 MB: time ours / sentencepiece {t / pt:.2f}x; peak RSS ours {m:.0f} MiB vs "
        f"sentencepiece {pm:.0f} MiB ({m / pm:.2f}x); goal ours < 2048 MiB: {'met' if m < 2048 else 'NOT met'}"
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="1 MB and vocab 8,000: a quick check")
    ap.add_argument("--vocab-size", type=int, default=None)
    ap.add_argument("--skip-unigram", action="store_true")
    ap.add_argument("--unigram-100mb", action="store_true", help="only Unigram training memory on a 100 MB corpus")
    args = ap.parse_args(argv)
    from bertology.hardware import cpu_summary

    print(cpu_summary(), flush=True)
    vocab = args.vocab_size or (8000 if args.small else 30000)
    if args.unigram_100mb:
        return unigram_memory(vocab)
    train_p, held_p, n_train = build_corpus(args.small)
    held = held_p.read_text(encoding="utf-8").splitlines()
    held = [h for h in held if h.strip()]
    n_held = sum(len(h.encode("utf-8")) for h in held)
    print(
        f"corpus: {train_p} ({n_train / 1e6:.1f} MB train), {held_p} ({n_held / 1e6:.2f} MB held out), "
        f"vocab {vocab}, {os.cpu_count()} CPUs"
    )

    import sentencepiece
    import tokenizers

    print(
        f"peers: tokenizers {tokenizers.__version__}, sentencepiece {sentencepiece.__version__}; "
        f"Python {sys.version.split()[0]}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-tok-") as d:
        run_all(args, vocab, Path(d), train_p, held, n_held)


def run_all(args, vocab: int, tmp: Path, train_p: Path, held: list[str], n_held: int) -> None:
    from tokenizers import Tokenizer as HFTokenizer
    from bertology.tokenizers import Tokenizer

    rows, trained = [], {}
    kinds = ["bytelevel-bpe", "wordpiece-freq", "wordpiece-lik"] + ([] if args.skip_unigram else ["unigram"])
    for kind in kinds:
        for who, fn in [("ours", job_ours), ("tokenizers", job_hf), ("sentencepiece", job_spm)]:
            if (who == "tokenizers" and kind == "wordpiece-lik") or (who == "sentencepiece" and kind != "unigram"):
                continue
            out = str(tmp / f"{kind}-{who}.{'model' if who == 'sentencepiece' else 'json'}")
            seconds, rss, base = measure(fn, kind, str(train_p), vocab, out)
            trained[kind, who] = out
            rows.append((kind, who, seconds, rss))
            print(
                f"  trained {kind:15s} {who:13s} {seconds:7.1f} s  peak RSS {rss:7.0f} MiB "
                f"({base:.0f} MiB of it after imports alone)",
                flush=True,
            )

    print("\n== training time (ratio = ours / peer; goal <= 3x for BPE and WordPiece, <= 1x sentencepiece for Unigram)")
    t = {(k, w): s for k, w, s, _ in rows}
    m = {(k, w): r for k, w, _, r in rows}
    for kind in kinds:
        peers = [w for k, w, _, _ in rows if k == kind and w != "ours"]
        peer_kind = "wordpiece-freq" if kind == "wordpiece-lik" else kind
        peers = peers or ["tokenizers"]
        ratios = "  ".join(f"{t[kind, 'ours'] / t[peer_kind, p]:5.2f}x vs {p} ({t[peer_kind, p]:.1f} s)" for p in peers)
        print(f"  {kind:15s} ours {t[kind, 'ours']:7.1f} s   {ratios}")
    print("\n== peak RSS while training (MiB; ratio = ours / peer)")
    for kind in kinds:
        peer_kind = "wordpiece-freq" if kind == "wordpiece-lik" else kind
        peers = [w for k, w, _, _ in rows if k == peer_kind and w != "ours"]
        print(
            f"  {kind:15s} ours {m[kind, 'ours']:.0f}   "
            + "  ".join(f"{p} {m[peer_kind, p]:.0f} ({m[kind, 'ours'] / m[peer_kind, p]:.2f}x)" for p in peers)
        )

    print("\n== same merges? (byte-level BPE, ours vs tokenizers)")
    ours_bpe = json.loads(Path(trained["bytelevel-bpe", "ours"]).read_text(encoding="utf-8"))["model"]
    hf_bpe = json.loads(Path(trained["bytelevel-bpe", "tokenizers"]).read_text(encoding="utf-8"))["model"]
    om = [tuple(x) if isinstance(x, list) else tuple(x.split(" ")) for x in ours_bpe["merges"]]
    hm = [tuple(x) if isinstance(x, list) else tuple(x.split(" ")) for x in hf_bpe["merges"]]
    first_diff = next((i for i, (a, b) in enumerate(zip(om, hm)) if a != b), min(len(om), len(hm)))
    print(
        f"  {len(om)} vs {len(hm)} merges; identical prefix {first_diff}; same vocab: "
        f"{ours_bpe['vocab'] == hf_bpe['vocab']}"
    )

    print("\n== batch encoding throughput on held-out text (MB/s; ratio = ours / tokenizers, goal >= 1.0)")
    for kind in ["wordpiece-freq", "bytelevel-bpe"]:
        ours = Tokenizer.load(trained[kind, "ours"])
        hf = HFTokenizer.from_file(trained[kind, "ours"])  # the same file, two implementations
        a = throughput(ours.encode_batch, held, n_held)
        b = throughput(hf.encode_batch, held, n_held)
        print(f"  {kind:15s} ours {a:7.2f} MB/s   tokenizers {b:7.2f} MB/s   ratio {a / b:.3f}")

    print("\n== compression: tokens per whitespace word on held-out text (goal: within 1%)")

    def tpw_json(path):
        tok = HFTokenizer.from_file(path)
        return tokens_per_word(lambda s: len(tok.encode(s, add_special_tokens=False).ids), held)

    cmp_rows = [("bytelevel-bpe", "ours", "tokenizers"), ("wordpiece-freq", "ours", "tokenizers")]
    if not args.skip_unigram:
        cmp_rows += [("unigram", "ours", "tokenizers"), ("unigram", "ours", "sentencepiece")]
    tpw = {}
    for kind, who in {(k, w) for k, a, b in cmp_rows for w in (a, b)} | {("wordpiece-lik", "ours")}:
        if who == "sentencepiece":
            import sentencepiece as spm

            sp = spm.SentencePieceProcessor(model_file=trained[kind, who])
            tpw[kind, who] = tokens_per_word(lambda s: len(sp.encode(s)), held)
        else:
            tpw[kind, who] = tpw_json(trained[kind, who])
    for kind, a, b in cmp_rows:
        diff = 100 * (tpw[kind, a] / tpw[kind, b] - 1)
        print(f"  {kind:15s} ours {tpw[kind, a]:.4f}   {b} {tpw[kind, b]:.4f}   difference {diff:+.2f}%")
    lik, freq = tpw["wordpiece-lik", "ours"], tpw["wordpiece-freq", "ours"]
    print(
        f"\n== WordPiece criterion: likelihood {lik:.4f} vs frequency (BPE-style) {freq:.4f} tokens/word "
        f"({100 * (lik / freq - 1):+.2f}%)"
    )


if __name__ == "__main__":
    main()
