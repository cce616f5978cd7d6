"""Build data/debian-descriptions/: Debian's long package descriptions as an unlabelled, in-domain
pretraining corpus for data/debian-sections, with no text of its dev or test split in it.

    .venv/bin/python data/debian-descriptions/build.py \\
        --translations /var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en.lz4 \\
        --packages /var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4 \\
        --sections data/debian-sections \\
        data/debian-descriptions

Inputs: the bookworm main Translation-en index (Package, Description-md5, Description-en) and the
binary-amd64 Packages index (for each binary's Source), both lz4-compressed as apt keeps them
(decompressed with the `lz4` command; plain files work too), and the dev / test splits of
data/debian-sections. Standard library, plus `bertology.data.split_sentences` from this
checkout's src/ (so run it with the project's Python: the splitter needs `regex`).
Steps:
  1. render each Description-en as a document (`render`): the short description is the first
     line; each paragraph of the long description (its wrapped lines joined; " ." lines end a
     paragraph) is cut into sentences with `split_sentences`, one per line. A list item (a line
     opening with a bullet "*", "-", "+", "o" or "•" at any indent, or with "1." / "1)"; inside a
     running paragraph only after a line ending in ":") starts a block of its own, continued by
     the following lines indented as deep as its bullet or deeper that start no item; so does a
     verbatim (indented two or more) table row "name: ..." or "name -- ...". Any other line
     indented differently from the block before it starts a block too, continued by the lines
     of its indent. Bullet symbols are dropped, enumerators and names kept, whitespace is
     collapsed;
  2. deduplicate: documents whose text, with case and whitespace folded (`fold`), is the same
     (e.g. the same Description-md5 shared by several binaries) are one document, kept at its
     first place in the index (which is sorted by package) and listing all packages that share it;
  3. drop, for leakage, every document that any of these packages shares:
     a. a package of the debian-sections dev or test split, or any binary of the same source
        package (Source from the Packages index, first word; the package itself when absent);
     b. a package absent from the amd64 Packages index (built for other architectures only): its
        source is unknown, so it could be a sibling of a dev / test package;
     and then every document whose folded text contains the folded short description of a dev or
     test example as a substring (c). The train split's packages stay: their text is unlabelled here;
  4. write descriptions.txt.xz (the "lines" format: one sentence per line, a blank line between
     documents), documents.tsv.xz (document index from 0, the packages sharing it, their sources)
     and excluded-sources.txt (the sources of the dev / test packages), each atomically.
Same inputs (and the same split_sentences and liblzma), same bytes out.
"""
from __future__ import annotations

import argparse
import collections
import csv
import importlib.util
import io
import lzma
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
from bertology.data.corpus import split_sentences  # noqa: E402  (the checkout's splitter, on purpose)
from bertology.io import atomic_path  # noqa: E402


def _sections_build():
    """data/debian-sections/build.py, whose index reader and text folding this corpus shares."""
    spec = importlib.util.spec_from_file_location("debian_sections_build", ROOT / "data" / "debian-sections" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_sections = _sections_build()
read_index, fold = _sections.read_index, _sections.fold

HELDOUT = ("dev", "test")
CORPUS, DOCUMENTS, EXCLUDED = "descriptions.txt.xz", "documents.tsv.xz", "excluded-sources.txt"
XZ_PRESET = 9
_BULLET = re.compile(r"([*+o\u2022-])\s+")   # dropped from the item's text
_ENUMERATOR = re.compile(r"(\d+|[a-z])[.)]\s+")  # kept in the item's text
_TERM = re.compile(r"[^\s:]+(:| --?)\s+\S")  # "name: ..." / "name -- ...", kept


def parse_stanzas(text: str) -> list[dict[str, str]]:
    """deb822 stanzas -> {field: value}; a field's continuation lines follow its first line, each
    after a newline and with its leading whitespace kept.

    >>> parse_stanzas("Package: a\\nDescription-en: An editor\\n long text\\n .\\n more\\n\\nPackage: b\\n")
    [{'Package': 'a', 'Description-en': 'An editor\\n long text\\n .\\n more'}, {'Package': 'b'}]
    """
    out = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = None
        for line in block.split("\n"):
            if line and line[0].isspace():
                if key is None:
                    raise ValueError(f"continuation line before any field: {line!r}")
                fields[key] += "\n" + line.rstrip()
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if "Package" in fields:
            out.append(fields)
    return out


def render(description: str) -> list[str]:
    """A Description-en value -> the document's lines (step 1).

    >>> render("Ping tool\\n It pings. It is fast.\\n .\\n Features:\\n  * IPv4 and\\n    IPv6\\n  * 3-way")
    ['Ping tool', 'It pings.', 'It is fast.', 'Features:', 'IPv4 and IPv6', '3-way']
    >>> render("Scripts\\n Included:\\n  0x0st -- upload a file\\n  8-ball -- a game\\n  act: reset\\n   the window")
    ['Scripts', 'Included:', '0x0st -- upload a file', '8-ball -- a game', 'act: reset the window']
    >>> render("Lib\\n Made in\\n 1611) it was. Parts:\\n  - one, and\\n  more;\\n  - two")
    ['Lib', 'Made in 1611) it was.', 'Parts:', 'one, and more;', 'two']
    """
    short, *long = description.split("\n")
    lines = [" ".join(short.split())] if short.strip() else []
    blocks: list[list[str]] = []
    indent, is_item = 0, False  # of the current block
    for raw in long:
        text = raw.lstrip()
        ind = len(raw) - len(text)
        if text == ".":
            blocks.append([])  # a paragraph break: the next line starts a new block
            indent, is_item = 0, False
            continue
        running = bool(blocks and blocks[-1])
        bullet = _BULLET.match(text)
        # "in\n 1611) which" or "May\n 2005. Another": a wrapped paragraph, not a list, unless the
        # line before ends in a colon
        wrapped = running and not is_item and ind == indent and not blocks[-1][-1].endswith(":")
        # "name -- what it does" / "name: what it does" rows of a verbatim table, unless the line
        # continues an item
        term = ind >= 2 and _TERM.match(text) and not (running and is_item and ind > indent)
        if (bullet or _ENUMERATOR.match(text) or term) and not wrapped:
            blocks.append([text[bullet.end():] if bullet else text])
            indent, is_item = ind, True
        elif running and (ind >= indent if is_item else ind == indent):
            blocks[-1].append(text)  # a wrapped line of the paragraph, or of the item (even unindented)
        else:
            blocks.append([text])
            indent, is_item = ind, False
    for block in blocks:
        lines.extend(split_sentences(" ".join(block)))
    return lines


def source_of(packages_index: list[dict[str, str]]) -> dict[str, str]:
    """binary package -> its source package (the Source field's first word, else the package)."""
    out: dict[str, str] = {}
    for s in packages_index:
        source = s.get("Source", s["Package"]).split()[0]
        if out.setdefault(s["Package"], source) != source:
            raise ValueError(f"package {s['Package']}: two sources in the Packages index: "
                             f"{out[s['Package']]} and {source}")
    return out


def read_heldout(sections_dir: str | os.PathLike) -> list[tuple[str, str]]:
    """(package, short description) of every dev and test example of data/debian-sections."""
    rows = []
    for split in HELDOUT:
        path = Path(sections_dir) / f"{split}.tsv"
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            if reader.fieldnames != ["package", "text", "label"]:
                raise ValueError(f"{path}: expected the columns package, text, label, got {reader.fieldnames}")
            rows.extend((r["package"], r["text"]) for r in reader)
    return rows


def find_containing(keys: list[str], needles) -> dict[str, list[int]]:
    """{needle: indices of the keys that contain it as a substring}, for folded keys and needles.

    Fast without scanning the whole text once per needle: a needle of three or more words holds
    its interior words as whole words of any key that contains it, so only the keys holding its
    rarest interior word are searched; shorter needles are searched in every key.

    >>> find_containing(["a tank-battling game for two", "battling games", "xtank-battling gamey"],
    ...                 ["tank-battling game", "battling game for two"])
    {'tank-battling game': [0, 2], 'battling game for two': [0]}
    """
    postings: dict[str, list[int]] = collections.defaultdict(list)
    for i, key in enumerate(keys):
        for word in set(key.split()):
            postings[word].append(i)
    every = range(len(keys))
    found = {}
    for needle in needles:
        interior = needle.split()[1:-1]
        candidates = min((postings.get(w, []) for w in interior), key=len) if interior else every
        found[needle] = [i for i in candidates if needle in keys[i]]
    return found


def build(translations, packages, sections_dir, out_dir) -> dict[str, int]:
    stanzas = parse_stanzas(read_index(translations))
    sources = source_of(parse_stanzas(read_index(packages)))
    heldout = read_heldout(sections_dir)
    missing = sorted({p for p, _ in heldout if p not in sources})
    if missing:
        raise ValueError(f"{packages}: no stanza for the dev/test package(s) {', '.join(missing)}")
    excluded = sorted({sources[p] for p, _ in heldout})
    excluded_set, heldout_packages = set(excluded), {p for p, _ in heldout}

    # 1-2: render, then one document per folded text, in index order
    docs: dict[str, tuple[list[str], list[str]]] = {}  # fold -> (lines, packages)
    for s in stanzas:
        if "Description-en" not in s:
            raise ValueError(f"{translations}: package {s['Package']} has no Description-en")
        lines = render(s["Description-en"])
        if not lines:
            raise ValueError(f"{translations}: package {s['Package']}: empty description")
        docs.setdefault(fold(" ".join(lines)), (lines, []))[1].append(s["Package"])

    # 3: leakage
    stats = collections.Counter(stanzas=len(stanzas), distinct=len(docs), dropped_heldout_source=0,
                                dropped_unknown_source=0, dropped_heldout_text=0)
    kept: dict[str, tuple[list[str], list[str]]] = {}
    for key, (lines, pkgs) in docs.items():
        if any(p in heldout_packages or sources.get(p) in excluded_set for p in pkgs):
            stats["dropped_heldout_source"] += 1
        elif any(p not in sources for p in pkgs):
            stats["dropped_unknown_source"] += 1
        else:
            kept[key] = (lines, pkgs)
    keys = list(kept)
    hits = find_containing(keys, sorted({fold(t) for _, t in heldout}))
    leaking = {keys[i] for found in hits.values() for i in found}
    stats["dropped_heldout_text"] = len(leaking)
    documents = [(lines, pkgs) for key, (lines, pkgs) in kept.items() if key not in leaking]

    # 4: write
    out_dir = Path(out_dir)
    text = "\n".join("".join(line + "\n" for line in lines) for lines, _ in documents).encode("utf-8")
    stats.update(documents=len(documents), sentences=sum(len(lines) for lines, _ in documents),
                 words=sum(len(line.split()) for lines, _ in documents for line in lines),
                 bytes_uncompressed=len(text))
    table = io.StringIO(newline="")
    table.write("document\tpackages\tsources\n")
    for i, (_, pkgs) in enumerate(documents):
        names = sorted(set(pkgs))
        table.write(f"{i}\t{','.join(names)}\t{','.join(sorted({sources[p] for p in names}))}\n")
    _write(out_dir / CORPUS, lzma.compress(text, preset=XZ_PRESET))
    _write(out_dir / DOCUMENTS, lzma.compress(table.getvalue().encode("utf-8"), preset=XZ_PRESET))
    _write(out_dir / EXCLUDED, "".join(s + "\n" for s in excluded).encode("utf-8"))
    stats["bytes_compressed"] = (out_dir / CORPUS).stat().st_size
    stats["excluded_sources"] = len(excluded)
    return dict(stats)


def _write(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a data file is for everyone to read


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--translations", required=True, help="the Translation-en index (.lz4 or plain)")
    ap.add_argument("--packages", required=True, help="the binary-amd64 Packages index (.lz4 or plain)")
    ap.add_argument("--sections", required=True, help="the data/debian-sections directory (dev.tsv, test.tsv)")
    ap.add_argument("out_dir")
    args = ap.parse_args(argv)
    stats = build(args.translations, args.packages, args.sections, args.out_dir)
    for key, value in stats.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
