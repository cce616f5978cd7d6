"""data/debian-graph: the shipped edge list as its README describes it (hashes, counts, every
endpoint a package of the index), the relation parser, and (where this machine has the same
Packages index) a rebuild byte for byte."""

import hashlib
import importlib.util
import lzma
import shutil
from pathlib import Path

import pytest

from bertology.readers import read_table
from bertology.wordvec.graph import Graph

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "data" / "debian-graph"
EDGES, PACKAGES = DIR / "edges.tsv.xz", DIR / "packages.txt.xz"
INDEX = Path("/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4")
README = (DIR / "README.md").read_text(encoding="utf-8")


def build_module():
    spec = importlib.util.spec_from_file_location("debian_graph_build", DIR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_relation_fields_give_one_edge_per_alternative():
    targets = build_module().targets
    assert targets("a (>= 1.0) | b:any, c [amd64] <!nocheck>, ${misc:Depends}") == ["a", "b", "c"]
    assert targets("") == []


def test_the_shipped_files_are_the_ones_the_readme_hashes():
    for path in (EDGES, PACKAGES):
        assert f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}" in README


def test_edges_join_packages_of_the_index_and_the_counts_hold():
    packages = lzma.decompress(PACKAGES.read_bytes()).decode().split()
    lines = lzma.decompress(EDGES.read_bytes()).decode().splitlines()
    edges = [tuple(line.split("\t")) for line in lines]
    assert len(packages) == 63_436 and packages == sorted(set(packages))
    assert len(edges) == 276_401 and edges == sorted(set(edges)) and all(len(e) == 2 and e[0] != e[1] for e in edges)
    known = set(packages)
    assert all(a in known and b in known for a, b in edges)
    graph = Graph.read([EDGES])
    assert (len(graph), graph.edges, graph.duplicates, graph.self_loops) == (59_076, 274_950, 1_451, 0)
    linked = set(graph.nodes)
    covered = {
        split: sum(r["package"] in linked for r in read_table(ROOT / "data" / "debian-sections" / f"{split}.tsv").rows)
        for split in ("train", "dev", "test")
    }
    assert covered == {"train": 1_717, "dev": 247, "test": 494}


@pytest.mark.slow
def test_rebuilt_byte_for_byte_from_the_same_index(tmp_path):
    if not INDEX.exists() or shutil.which("lz4") is None:
        pytest.skip("this machine has not got the bookworm amd64 Packages index (or lz4)")
    if (
        hashlib.sha256(INDEX.read_bytes()).hexdigest()
        != "38163a87d0269f1af22bdddc092bf8e6c605f981642a09561e60565358f15e07"
    ):
        pytest.skip("a different release of the Packages index")
    build_module().build(str(INDEX), str(tmp_path))
    for path in (EDGES, PACKAGES):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes()
