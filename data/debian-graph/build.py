"""Build data/debian-graph/: Debian's package relationship graph, an edge list for node embeddings
(`bertology wordvec train --graph`), from the same bookworm amd64 Packages index that
data/debian-sections was built from.

    python3 data/debian-graph/build.py \\
        /var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4 \\
        data/debian-graph

Input: the bookworm main binary-amd64 Packages index (lz4-compressed as apt keeps it; a plain file
works too), read with data/debian-sections/build.py's `read_index` and `parse_stanzas`.
Standard library plus this checkout's `bertology.io.atomic_path`.
Steps:
  1. every stanza's Depends, Pre-Depends and Recommends fields (Suggests, Enhances, Breaks … are
     not used: they do not say a package needs another);
  2. each relation "a (>= 1) | b:any [amd64] <!nocheck>" gives one edge per alternative, to the
     name alone (version, architecture qualifier, architecture list and build profile dropped);
  3. an edge is kept when its target is the name of a binary package of the index; a target only
     some package Provides (a virtual package such as `mail-transport-agent`) is dropped and
     counted, and so is an edge from a package to itself;
  4. duplicates (the same pair from several fields or alternatives) are one edge;
  5. write edges.tsv.xz (source TAB target, the source the package that depends; sorted) and
     packages.txt.xz (every binary package of the index, sorted, one a line: the graph's nodes,
     with those that have no edge), atomically.
Same input (and the same liblzma), same bytes out.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import lzma
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
from bertology.io import atomic_path  # noqa: E402

FIELDS = ("Depends", "Pre-Depends", "Recommends")
EDGES, PACKAGES = "edges.tsv.xz", "packages.txt.xz"
XZ_PRESET = 9
_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]*")


def _sections_build():
    """data/debian-sections/build.py, whose index reader this graph shares."""
    spec = importlib.util.spec_from_file_location("debian_sections_build", ROOT / "data" / "debian-sections" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def targets(relation: str) -> list[str]:
    """The package names of a relation field, one per alternative (step 2).

    >>> targets("libc6 (>= 2.34), default-mta | mail-transport-agent, python3:any, foo [amd64] <!nocheck>")
    ['libc6', 'default-mta', 'mail-transport-agent', 'python3', 'foo']
    """
    out = []
    for part in relation.split(","):
        for alternative in part.split("|"):
            m = _NAME.match(alternative.strip())
            if m:
                out.append(m.group(0))
    return out


def build(index_path: str, out_dir: str) -> dict[str, int]:
    sections = _sections_build()
    stanzas = sections.parse_stanzas(sections.read_index(index_path))
    packages = sorted({s["Package"] for s in stanzas})
    known = set(packages)
    edges: set[tuple[str, str]] = set()
    counts = collections.Counter()
    for s in stanzas:
        for field in FIELDS:
            for target in targets(s.get(field, "")):
                counts["relations"] += 1
                if target == s["Package"]:
                    counts["self"] += 1
                elif target not in known:
                    counts["virtual"] += 1
                else:
                    edges.add((s["Package"], target))
    linked = {a for a, _ in edges} | {b for _, b in edges}
    os.makedirs(out_dir, exist_ok=True)
    write_xz(os.path.join(out_dir, EDGES), "".join(f"{a}\t{b}\n" for a, b in sorted(edges)))
    write_xz(os.path.join(out_dir, PACKAGES), "".join(f"{p}\n" for p in packages))
    return {"packages": len(packages), "edges": len(edges), "packages_with_edges": len(linked),
            "relations": counts["relations"], "virtual_dropped": counts["virtual"], "self_dropped": counts["self"]}


def write_xz(path: str, text: str) -> None:
    data = lzma.compress(text.encode("utf-8"), preset=XZ_PRESET)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a data file is for everyone to read


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packages", help="the bookworm main binary-amd64 Packages index (.lz4 or plain)")
    ap.add_argument("out_dir")
    args = ap.parse_args(argv)
    stats = build(args.packages, args.out_dir)
    print(", ".join(f"{k} {v:,}" for k, v in stats.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
