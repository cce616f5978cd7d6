"""Build data/wiki.txt: plain English Wikipedia prose, one sentence per line, a blank line
between articles (the format `bertology.data.iter_documents(format="lines")` reads).

Source: the English Wikipedia dump extract that gensim ships as test data,
site-packages/gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2

    .venv/bin/python data/build_corpus.py \\
        .venv/lib/python3.11/site-packages/gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2 \\
        data/wiki.txt --max-bytes 3000000

Only the standard library and bertology's sentence splitter are used (gensim is not imported).
Steps, per article (namespace 0, redirects skipped):
  1. drop comments, <ref> notes, templates {{...}} (nested), tables {|...|} and magic words;
  2. links: [[File:/Image:/Category:/interlanguage ...]] dropped, [[target|label]] -> label,
     [[target]] -> target, [http://... label] -> label;
  3. bold/italic quotes, HTML tags and entities removed;
  4. keep prose paragraphs only (no headings, lists, indented or table lines), stop at the
     closing sections (See also, References, External links, ...);
  5. split each paragraph into sentences, keep sentences of at least 3 words that end in
     sentence punctuation;
  6. write articles until the next one would pass --max-bytes; written atomically.
"""
from __future__ import annotations

import argparse
import bz2
import html
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from bertology.data.corpus import split_sentences  # noqa: E402

_END_SECTIONS = {"see also", "references", "external links", "further reading", "notes", "bibliography",
                 "sources", "footnotes", "citations", "notes and references", "works cited"}
_DROP_LINK = re.compile(r"^\s*(file|image|category|media|wikipedia|wp|[a-z]{2,3}(-[a-z]+)?):", re.I)


def _strip_nested(text: str, pattern: re.Pattern, repl="") -> str:
    """Apply `pattern` (which matches an innermost construct) until nothing changes."""
    while True:
        new = pattern.sub(repl, text)
        if new == text:
            return text
        text = new


def _link(m: re.Match) -> str:
    inner = m.group(1)
    if _DROP_LINK.match(inner):
        return ""
    return inner.split("|")[-1]


def strip_markup(wikitext: str) -> str:
    t = re.sub(r"<!--.*?-->", "", wikitext, flags=re.S)
    t = re.sub(r"<ref[^>]*/>", "", t, flags=re.I)
    t = re.sub(r"<ref[^>]*>.*?</ref>", "", t, flags=re.I | re.S)
    t = _strip_nested(t, re.compile(r"\{\{[^{}]*\}\}"))
    t = _strip_nested(t, re.compile(r"\{\|[^{}]*?\|\}", re.S))
    t = re.sub(r"__[A-Z]+__", "", t)
    t = _strip_nested(t, re.compile(r"\[\[([^\[\]]*)\]\]"), _link)
    t = re.sub(r"\[(?:https?|ftp)://[^\s\]]+\s*([^\]]*)\]", r"\1", t)
    t = re.sub(r"'{2,}", "", t)
    t = re.sub(r"<[^>]+>", "", t)
    return html.unescape(t).replace("\xa0", " ")


def article_sentences(wikitext: str) -> list[str]:
    out = []
    for line in strip_markup(wikitext).split("\n"):
        line = line.strip()
        heading = re.fullmatch(r"=+\s*(.*?)\s*=+", line)
        if heading:
            if heading.group(1).lower() in _END_SECTIONS:
                break
            continue
        if not line or line[0] in "*#:;|!{}[=":
            continue
        for s in split_sentences(line):
            if len(s.split()) >= 3 and s[-1] in ".!?\"'" and "{" not in s and "}" not in s:
                out.append(s)
    return out


def iter_articles(path: str):
    """(title, wikitext) of each main-namespace, non-redirect page, streamed."""
    with bz2.open(path, "rb") as f:
        for _, elem in ET.iterparse(f):
            if elem.tag.rsplit("}", 1)[-1] != "page":
                continue
            ns = {c.tag.rsplit("}", 1)[-1]: c for c in elem.iter()}
            if ns["ns"].text == "0" and "redirect" not in ns and ns.get("text") is not None:
                yield ns["title"].text, ns["text"].text or ""
            elem.clear()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump", help="enwiki-...-shortened.bz2 from gensim's test data")
    ap.add_argument("out", help="output text file")
    ap.add_argument("--max-bytes", type=int, default=3_000_000)
    args = ap.parse_args(argv)

    written, n_articles, n_sentences = 0, 0, 0
    directory = os.path.dirname(os.path.abspath(args.out))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            for _title, text in iter_articles(args.dump):
                sentences = article_sentences(text)
                if len(sentences) < 2:
                    continue
                block = ("\n" if n_articles else "") + "\n".join(sentences) + "\n"
                size = len(block.encode("utf-8"))
                if written + size > args.max_bytes:
                    break
                f.write(block)
                written += size
                n_articles += 1
                n_sentences += len(sentences)
        os.replace(tmp, args.out)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"{args.out}: {n_articles} articles, {n_sentences} sentences, {written} bytes")


if __name__ == "__main__":
    main()
