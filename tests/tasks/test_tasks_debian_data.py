"""data/debian-sections: balanced, deduplicated, disjoint splits, sections as its README says,
and (where this machine has the same Debian index) rebuilt byte for byte."""

import hashlib
import importlib.util
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bertology.readers import read_table

DIR = Path(__file__).resolve().parents[2] / "data" / "debian-sections"
SPLITS = {"train": 175, "dev": 25, "test": 50}
GIVEAWAY = {
    "python",
    "perl",
    "libs",
    "libdevel",
    "ruby",
    "java",
    "php",
    "haskell",
    "ocaml",
    "rust",
    "golang",
    "javascript",
    "lisp",
    "doc",
    "debug",
    "oldlibs",
    "localization",
    "fonts",
    "kernel",
}
INDEX = Path("/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4")


def build_module():
    spec = importlib.util.spec_from_file_location("debian_build", DIR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables():
    return {split: read_table(DIR / f"{split}.tsv") for split in SPLITS}


def readme_sections():
    text = (DIR / "README.md").read_text(encoding="utf-8")
    return re.search(r"^`([a-z ]+)`$", text, re.M).group(1).split()


def test_columns_and_balance(tables):
    sections = readme_sections()
    assert sections == sorted(sections) and len(sections) == 10
    assert tuple(sections) == build_module().SECTIONS
    assert not GIVEAWAY & set(sections)
    for split, per_section in SPLITS.items():
        table = tables[split]
        assert table.columns == ["package", "text", "label"]
        counts = Counter(r["label"] for r in table.rows)
        assert counts == {s: per_section for s in sections}, split
        assert all(r.text("text") == r["text"].strip() for r in table.rows)


def test_no_description_or_package_in_two_splits(tables):
    fold = build_module().fold
    texts = [fold(r["text"]) for t in tables.values() for r in t.rows]
    assert len(texts) == len(set(texts)) == 2500
    packages = {split: {r["package"] for r in t.rows} for split, t in tables.items()}
    assert sum(map(len, packages.values())) == 2500
    assert not (
        packages["train"] & packages["dev"]
        or packages["train"] & packages["test"]
        or packages["dev"] & packages["test"]
    )


def test_readme_counts_and_hashes_match_files():
    readme = (DIR / "README.md").read_text(encoding="utf-8")
    for split, per_section in SPLITS.items():
        assert re.search(rf"`{split}\.tsv` \| {per_section * 10:,} \| {per_section} \|", readme), split
        digest = hashlib.sha256((DIR / f"{split}.tsv").read_bytes()).hexdigest()
        assert f"{digest}  {split}.tsv" in readme, split


def test_build_helpers():
    b = build_module()
    assert b.parse_stanzas("Package: a\nSource: src (1.0)\nDescription: An editor\n long\n\nPackage: b\n") == [
        {"Package": "a", "Source": "src (1.0)", "Description": "An editor"},
        {"Package": "b"},
    ]
    stanzas = [
        {"Package": "foo", "Section": "editors", "Description": "A text editor"},
        {"Package": "foo-data", "Source": "foo", "Section": "editors", "Description": "A text editor (data)"},
        {"Package": "foo-extra", "Source": "foo", "Section": "editors", "Description": "A text editor (extra)"},
        {"Package": "bar", "Section": "editors", "Description": "a  TEXT editor"},  # the same once folded
        {"Package": "old", "Section": "editors", "Description": "transitional package for foo"},
        {"Package": "py", "Section": "python", "Description": "Python bindings"},
    ]
    got = b.candidates(stanzas)
    # sources in sorted order: bar keeps the (folded) description, foo loses its namesake's copy and
    # keeps two of the rest (MAX_PER_SOURCE); the transitional stub and the python section are dropped
    assert got["editors"] == {
        "bar": [("bar", "a  TEXT editor")],
        "foo": [("foo-data", "A text editor (data)"), ("foo-extra", "A text editor (extra)")],
    }
    assert all(not v for k, v in got.items() if k != "editors")


@pytest.mark.skipif(not INDEX.exists(), reason="no Debian bookworm Packages index on this machine")
def test_rebuild_is_byte_identical(tmp_path):
    if hashlib.sha256(INDEX.read_bytes()).hexdigest() not in (DIR / "README.md").read_text():
        pytest.skip("this machine's Debian index is not the one the dataset was built from")
    subprocess.run([sys.executable, str(DIR / "build.py"), str(INDEX), str(tmp_path)], check=True, capture_output=True)
    for split in SPLITS:
        assert (tmp_path / f"{split}.tsv").read_bytes() == (DIR / f"{split}.tsv").read_bytes(), split
