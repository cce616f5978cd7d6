"""TokenizedCorpus.stream: permutation.build_stream of the same documents, in whole arrays."""

import pytest

from bertology.data.permutation import build_stream
from bertology.data.tokenized import tokenize_corpus


@pytest.mark.parametrize("files", [1, 3])
def test_stream_is_build_stream_of_the_documents(tmp_path, small_corpus, wordpiece, files):
    documents = small_corpus.read_text(encoding="utf-8").split("\n\n")
    paths = []
    for f in range(files):  # the shipped documents dealt into `files` files
        path = tmp_path / f"c{f}.txt"
        path.write_text("\n\n".join(documents[f::files]), encoding="utf-8")
        paths.append(path)
    corpus = tokenize_corpus(paths, wordpiece, tmp_path / "cache", workers=1)
    docs = [d for d in range(corpus.num_documents) if d % 3]  # a held-out split leaves gaps
    expected = build_stream(corpus.documents(docs), eod=99)
    ids, starts, sentence = corpus.stream(docs, eod=99)
    assert ids.tolist() == expected.ids.tolist() and starts.tolist() == expected.starts.tolist()
    assert sentence.tolist() == expected.sentence.tolist()
    assert [a.tolist() for a in corpus.stream([], eod=99)] == [[], [], []]
