"""data/debian-descriptions: leakage-free against the debian-sections dev/test splits, counts and
hashes as its README says, readable compressed by iter_documents, and (where this machine has the
same Debian indices) rebuilt byte for byte."""

import doctest
import hashlib
import importlib.util
import lzma
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bertology.data import iter_documents
from bertology.readers import read_table

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "data" / "debian-descriptions"
SECTIONS = ROOT / "data" / "debian-sections"
CORPUS, DOCUMENTS, EXCLUDED = DIR / "descriptions.txt.xz", DIR / "documents.tsv.xz", DIR / "excluded-sources.txt"
LISTS = Path("/var/lib/apt/lists")
TRANSLATIONS = LISTS / "deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en.lz4"
PACKAGES = LISTS / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4"
README = (DIR / "README.md").read_text(encoding="utf-8")


def build_module():
    spec = importlib.util.spec_from_file_location("debian_descriptions_build", DIR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fold(text: str) -> str:
    return " ".join(text.lower().split())


def readme_counts() -> dict[str, int]:
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| ([\d,]+) \|$", README, re.M)
    return {key: int(value.replace(",", "")) for key, value in rows}


def decompressed_sha256(path: Path) -> str:
    if shutil.which("lz4") is None:
        pytest.skip("no lz4 command to decompress the apt index")
    data = subprocess.run(["lz4", "-dc", str(path)], check=True, capture_output=True).stdout
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def heldout() -> list[tuple[str, str]]:
    """(package, short description) of every dev and test example."""
    return [(r["package"], r["text"]) for split in ("dev", "test") for r in read_table(SECTIONS / f"{split}.tsv").rows]


@pytest.fixture(scope="module")
def documents() -> list[list[str]]:
    return list(iter_documents(CORPUS))  # straight from the .xz file


@pytest.fixture(scope="module")
def table() -> list[tuple[int, list[str], list[str]]]:
    with lzma.open(DOCUMENTS, "rt", encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    assert lines[0] == "document\tpackages\tsources" and lines[-1] == ""
    rows = []
    for line in lines[1:-1]:
        index, packages, sources = line.split("\t")
        rows.append((int(index), packages.split(","), sources.split(",")))
    return rows


@pytest.fixture(scope="module")
def excluded() -> list[str]:
    return EXCLUDED.read_text(encoding="utf-8").splitlines()


def test_no_heldout_package_in_the_corpus(heldout, table, documents):
    assert [r[0] for r in table] == list(range(len(documents)))  # one row per document, in order
    packages = {p for _, pkgs, _ in table for p in pkgs}
    assert len(packages) > 50_000
    assert not packages & {p for p, _ in heldout}
    assert all(pkgs == sorted(set(pkgs)) and all(pkgs) for _, pkgs, _ in table)


def test_no_binary_of_an_excluded_source_in_the_corpus(heldout, table, excluded):
    assert excluded == sorted(set(excluded)) and all(excluded)
    assert len(excluded) >= len({p for p, _ in heldout}) // 2  # one source per dev/test package at most
    sources = {s for _, _, srcs in table for s in srcs}
    assert not sources & set(excluded)
    # the dev/test packages that are their own source are excluded by name, in both files
    assert {p for p, _ in heldout} & set(excluded)


def parse_sources(text: str) -> dict[str, str]:
    """binary -> source from a Packages index, written here independently of build.py."""
    out = {}
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line[:1].isalnum() and ": " in line)
        if "Package" in fields:
            out[fields["Package"]] = fields.get("Source", fields["Package"]).split()[0]
    return out


@pytest.mark.skipif(not PACKAGES.exists(), reason=f"no Debian bookworm Packages index ({PACKAGES}) on this machine")
def test_excluded_sources_recomputed_from_the_packages_index(heldout, table, excluded):
    if hashlib.sha256(PACKAGES.read_bytes()).hexdigest() not in README:
        pytest.skip("this machine's Packages index is not the one the corpus was built from")
    text = subprocess.run(["lz4", "-dc", str(PACKAGES)], check=True, capture_output=True).stdout.decode("utf-8")
    sources = parse_sources(text)
    assert sorted({sources[p] for p, _ in heldout}) == excluded
    for _, pkgs, srcs in table:  # and every row names its packages' sources
        assert sorted({sources[p] for p in pkgs}) == srcs, pkgs


def test_no_heldout_text_inside_any_document(heldout, documents):
    b = build_module()
    keys = [fold(" ".join(doc)) for doc in documents]
    needles = sorted({fold(t) for _, t in heldout})
    assert len(needles) == 750
    found = {n: hits for n, hits in b.find_containing(keys, needles).items() if hits}
    assert found == {}
    # the search itself finds what is there: a train text, and a dev/test text planted in a copy
    train = fold(read_table(SECTIONS / "train.tsv").rows[0]["text"])
    first, last = needles[0], needles[-1]
    assert first not in last and last not in first
    planted = keys[:50] + ["a " + first + " b", last]
    assert b.find_containing(planted, [first, last]) == {first: [50], last: [51]}
    assert b.find_containing(keys, [train])[train]


def test_find_containing_equals_brute_force(documents, heldout):
    b = build_module()
    keys = [fold(" ".join(doc)) for doc in documents[:3000]]
    needles = sorted({fold(t) for _, t in heldout}) + [fold(" ".join(documents[5][:1])), "game for", "free software"]
    brute = {n: [i for i, k in enumerate(keys) if n in k] for n in needles}
    assert b.find_containing(keys, needles) == brute
    assert sum(map(len, brute.values())) > 30  # the check had hits to find, of either kind
    assert any(brute[n] for n in needles if len(n.split()) < 3) and any(
        brute[n] for n in needles if len(n.split()) >= 3
    )


def test_readme_counts_and_hashes_match_files(documents, table, excluded):
    counts = readme_counts()
    assert (
        counts["distinct"]
        - counts["dropped_heldout_source"]
        - counts["dropped_unknown_source"]
        - counts["dropped_heldout_text"]
        == counts["documents"]
    )
    assert counts["documents"] == len(documents) == len(table)
    assert counts["sentences"] == sum(len(d) for d in documents)
    assert counts["words"] == sum(len(s.split()) for d in documents for s in d)
    with lzma.open(CORPUS) as f:
        data = f.read()
    assert counts["bytes_uncompressed"] == len(data)
    assert counts["bytes_compressed"] == CORPUS.stat().st_size <= 8_000_000
    assert counts["excluded_sources"] == len(excluded)
    assert f"`{hashlib.sha256(data).hexdigest()}`" in README
    for path in (CORPUS, DOCUMENTS, EXCLUDED):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"{digest}  {path.name}" in README, path.name


def test_corpus_reads_as_documents(documents):
    assert documents[0][0] == "Real-time strategy game of ancient warfare"
    assert all(doc and all(s and s == s.strip() for s in doc) for doc in documents)
    # every document's text is distinct once folded
    assert len({fold(" ".join(d)) for d in documents}) == len(documents)
    # list bullets are dropped, the items kept as lines of their own
    fiasco = next(d for d in documents if d[0] == "Open Free Fiasco Firmware Flasher")
    assert "editing Maemo firmware packages" in fiasco


def test_build_helpers():
    b = build_module()
    assert doctest.testmod(b).failed == 0
    description = (
        "Tool\n Does things. Really.\n .\n Features:\n  * fast,\n    small\n  - safe\n .\n"
        " Made in\n 2005. Then:\n 1. one\n 2) two\n     more\n .\n   verbatim a\n   verbatim b"
    )
    assert b.render(description) == [
        "Tool",
        "Does things.",
        "Really.",
        "Features:",
        "fast, small",
        "safe",
        "Made in 2005.",
        "Then:",
        "1. one",
        "2) two more",
        "verbatim a verbatim b",
    ]
    assert b.parse_stanzas("Package: a\nDescription-md5: 0f\nDescription-en: x\n y\n") == [
        {"Package": "a", "Description-md5": "0f", "Description-en": "x\n y"}
    ]


@pytest.mark.slow
@pytest.mark.skipif(
    not (TRANSLATIONS.exists() and PACKAGES.exists()),
    reason="this machine lacks the apt Translation-en or Packages index (apt-get update -o Acquire::Languages=en)",
)
def test_rebuild_is_byte_identical(tmp_path):
    for index in (TRANSLATIONS, PACKAGES):
        if decompressed_sha256(index) not in README:
            pytest.skip(f"{index.name} on this machine is not the one the corpus was built from")
    run = subprocess.run(
        [
            sys.executable,
            str(DIR / "build.py"),
            "--translations",
            str(TRANSLATIONS),
            "--packages",
            str(PACKAGES),
            "--sections",
            str(SECTIONS),
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    printed = {k: int(v) for k, v in re.findall(r"^(\w+): (\d+)$", run.stdout, re.M)}
    assert printed == readme_counts()
    for path in (CORPUS, DOCUMENTS, EXCLUDED):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
