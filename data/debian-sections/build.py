"""Build data/debian-sections/{train,dev,test}.tsv: Debian package short descriptions labelled with
their archive section (a real, balanced text-classification dataset).

    python3 data/debian-sections/build.py \\
        /var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4 \\
        data/debian-sections

Input: the Debian bookworm main Packages index (lz4-compressed as apt keeps it; decompressed with
the `lz4` command; a plain uncompressed Packages file works too). Standard library only.
Steps:
  1. parse the deb822 stanzas; keep Package, Source (its first word; the package itself when
     absent), Section, Description (the short, one-line description: the index carries no long
     descriptions);
  2. keep the SECTIONS below; drop transitional / dummy / metapackage stubs, which describe
     nothing;
  3. per source package keep at most MAX_PER_SOURCE binaries (those whose name is the source's
     first, then by name), so a big source (e.g. one with 30 plugin packages) cannot dominate;
  4. deduplicate descriptions (case and spacing folded) over the whole dataset: a description seen
     again (in any section) is dropped, so no text is in two splits or has two labels;
  5. per section, shuffle the source packages with random.Random(SEED) and fill test, dev, then train
     with whole source packages, so binaries of one source (near-identical descriptions such as
     "foo editor" / "foo editor (data files)") never straddle two splits; every section gets
     exactly PER_SECTION examples split 70/10/20;
  6. write TSV (header package, text, label; no quoting: descriptions contain no tabs) sorted by
     label then package, each file written atomically.
Same input, same bytes out.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import re
import subprocess
import sys
import tempfile

SECTIONS = ("editors", "games", "graphics", "mail", "math", "net", "science", "sound", "text", "web")
PER_SECTION = 250
SPLITS = (("test", 50), ("dev", 25), ("train", 175))  # filled in this order; 20/10/70 of PER_SECTION
MAX_PER_SOURCE = 2
SEED = 20240517
_STUB = re.compile(r"\b(transitional|dummy package|metapackage|meta-package)\b", re.I)


def read_index(path: str | os.PathLike) -> str:
    """An apt index (Packages, Translation-en) as text; .lz4 files through the `lz4` command."""
    path = os.fspath(path)
    if path.endswith(".lz4"):
        return subprocess.run(["lz4", "-dc", path], check=True, capture_output=True).stdout.decode("utf-8")
    with open(path, encoding="utf-8") as f:
        return f.read()


def parse_stanzas(text: str) -> list[dict[str, str]]:
    """deb822 stanzas -> dicts of their top-level fields (continuation lines are skipped).

    >>> parse_stanzas("Package: a\\nDescription: An editor\\n long text\\n\\nPackage: b\\nSection: net\\n")
    [{'Package': 'a', 'Description': 'An editor'}, {'Package': 'b', 'Section': 'net'}]
    """
    out = []
    for block in text.split("\n\n"):
        fields = {}
        for line in block.split("\n"):
            if line and not line[0].isspace() and ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if "Package" in fields:
            out.append(fields)
    return out


def fold(text: str) -> str:
    """The key descriptions are deduplicated (and, in data/debian-descriptions, leakage-checked) on.

    >>> fold("  Real-time  Strategy game ")
    'real-time strategy game'
    """
    return " ".join(text.lower().split())


def candidates(stanzas: list[dict[str, str]]) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """section -> source -> [(package, description)], steps 2-4, deterministic (sorted) order."""
    by_source: dict[tuple[str, str], dict[str, str]] = collections.defaultdict(dict)
    for s in stanzas:
        section, desc = s.get("Section", ""), s.get("Description", "")
        if section not in SECTIONS or not desc or _STUB.search(desc):
            continue
        if "\t" in desc:
            raise ValueError(f"package {s['Package']}: description contains a tab: {desc!r}")
        source = s.get("Source", s["Package"]).split()[0]
        by_source[(section, source)].setdefault(s["Package"], desc)  # first stanza of a package wins
    seen: set[str] = set()
    out: dict[str, dict[str, list[tuple[str, str]]]] = {sec: {} for sec in SECTIONS}
    for (section, source) in sorted(by_source):
        packages = by_source[(section, source)]
        order = sorted(packages, key=lambda p: (p != source, p))  # the source's namesake first
        kept = []
        for p in order:
            key = fold(packages[p])
            if key in seen:
                continue
            seen.add(key)
            kept.append((p, packages[p]))
            if len(kept) == MAX_PER_SOURCE:
                break
        if kept:
            out[section][source] = kept
    return out


def split_section(sources: dict[str, list[tuple[str, str]]], rng: random.Random, section: str):
    """Fill the splits in SPLITS order with whole source packages (a group may be cut at the
    quota boundary; its rest is dropped, never moved to another split)."""
    order = sorted(sources)
    rng.shuffle(order)
    total = sum(len(v) for v in sources.values())
    if total < PER_SECTION:
        raise ValueError(f"section {section}: only {total} usable descriptions, need {PER_SECTION}")
    result, it = {}, iter(order)
    for split, quota in SPLITS:
        rows: list[tuple[str, str]] = []
        while len(rows) < quota:
            try:
                rows.extend(sources[next(it)][:quota - len(rows)])
            except StopIteration:
                raise ValueError(f"section {section}: ran out of source packages filling {split}") from None
        result[split] = rows
    return result


def write_tsv(path: str, rows: list[tuple[str, str, str]]) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write("package\ttext\tlabel\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; a data file is for everyone to read
    os.replace(tmp, path)


def build(index_path: str, out_dir: str) -> dict[str, collections.Counter]:
    data = candidates(parse_stanzas(read_index(index_path)))
    rng = random.Random(SEED)
    splits: dict[str, list[tuple[str, str, str]]] = {name: [] for name, _ in SPLITS}
    for section in SECTIONS:  # one rng, sections in fixed order: deterministic
        for split, rows in split_section(data[section], rng, section).items():
            splits[split].extend((pkg, desc, section) for pkg, desc in rows)
    os.makedirs(out_dir, exist_ok=True)
    counts = {}
    for split, rows in splits.items():
        rows.sort(key=lambda r: (r[2], r[0]))
        write_tsv(os.path.join(out_dir, f"{split}.tsv"), rows)
        counts[split] = collections.Counter(r[2] for r in rows)
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", help="a Debian Packages index (.lz4 or plain)")
    ap.add_argument("out_dir")
    args = ap.parse_args(argv)
    counts = build(args.index, args.out_dir)
    for split in ("train", "dev", "test"):
        c = counts[split]
        print(f"{split}: {sum(c.values())}  " + " ".join(f"{s}={c[s]}" for s in SECTIONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
