"""CoNLL reading and the conlleval chunk score, on hand-checked examples."""

import pytest
from hypothesis import given, settings, strategies as st

from bertology.tasks.conll import chunks, conlleval, count_chunks, read_conll, split_tag


def test_conlleval_hand_checked():
    gold = [
        ["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O", "B-ORG"],
        ["I-PER", "I-PER", "B-PER", "O"],
    ]  # IOB1: B only between adjacent PERs
    pred = [["B-PER", "I-PER", "O", "B-LOC", "O", "O", "I-ORG"], ["I-PER", "I-PER", "I-PER", "O"]]
    # Sentence 1. gold chunks PER[0-1] LOC[3-4] ORG[6]; guessed PER[0-1] LOC[3] ORG[6]
    #   (I-ORG after O opens a chunk). Right: PER (same span, type) and ORG; LOC ends early.
    # Sentence 2. gold PER[0-1] PER[2] (the B splits them); guessed PER[0-2]: nothing right.
    # found_correct = 3 + 2 = 5, found_guessed = 3 + 1 = 4, correct = 2.
    # Tokens 11; tags equal at 0,1,2,3,5 in sentence 1 (4: I-LOC/O, 6: B-ORG/I-ORG) and 0,1,3 in 2 -> 8.
    c = count_chunks(gold, pred)
    assert (c.found_correct, c.found_guessed, c.correct_chunks, c.tokens, c.correct_tags) == (5, 4, 2, 11, 8)
    assert c.by_type == {"PER": [3, 2, 1], "LOC": [1, 1, 0], "ORG": [1, 1, 1]}
    s = conlleval(gold, pred)
    assert s["precision"] == pytest.approx(50.0)
    assert s["recall"] == pytest.approx(40.0)
    assert s["f1"] == pytest.approx(2 * 50 * 40 / 90)  # 44.44
    assert s["accuracy"] == pytest.approx(800 / 11)
    assert s["PER_precision"] == pytest.approx(50.0) and s["PER_recall"] == pytest.approx(100 / 3)
    assert s["ORG_f1"] == pytest.approx(100.0) and s["LOC_f1"] == 0.0


def test_chunk_rules():
    assert chunks(["B-PER", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 1)]  # a type change ends and starts
    assert chunks(["I-PER", "O", "I-PER", "I-PER"]) == [("PER", 0, 0), ("PER", 2, 3)]  # I after O starts
    assert chunks(["B-PER", "B-PER", "I-PER"]) == [("PER", 0, 0), ("PER", 1, 2)]
    assert chunks(["O", "O"]) == []
    assert chunks(["B-X", "E-X", "I-X"]) == [("X", 0, 1), ("X", 2, 2)]  # E closes; I after E opens
    assert split_tag("B-PER-X") == ("B", "PER-X")


def test_sentence_boundary_closes_chunks():
    # a chunk at the end of sentence 1 and an I- chunk at the start of sentence 2 stay two chunks
    c = count_chunks([["O", "B-PER"], ["I-PER", "O"]], [["O", "B-PER"], ["I-PER", "O"]])
    assert (c.found_correct, c.found_guessed, c.correct_chunks) == (2, 2, 2)


def test_nothing_guessed_scores_zero():
    s = conlleval([["B-PER"]], [["O"]])
    assert (s["precision"], s["recall"], s["f1"], s["accuracy"]) == (0.0, 0.0, 0.0, 0.0)


TAGS = st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "E-LOC"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(TAGS, TAGS), min_size=1, max_size=8), min_size=1, max_size=4))
def test_counting_loop_equals_chunk_sets(sentences):
    # conlleval's streaming loop counts a chunk right exactly when the same (type, first, last) is in both
    gold = [[g for g, _ in s] for s in sentences]
    pred = [[p for _, p in s] for s in sentences]
    c = count_chunks(gold, pred)
    assert c.found_correct == sum(len(chunks(g)) for g in gold)
    assert c.found_guessed == sum(len(chunks(p)) for p in pred)
    assert c.correct_chunks == sum(len(set(chunks(g)) & set(chunks(p))) for g, p in zip(gold, pred))


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 guessed"):
        count_chunks([["O", "O"]], [["O"]])


def test_read_fixture(fixtures_dir):
    path = fixtures_dir / "ner_bio.conll"
    ex = read_conll(str(path))
    assert len(ex) == 4  # -DOCSTART- lines are not sentences
    assert ex[0].text == ["John", "Smithson", "lives", "in", "Paris", "."]
    assert ex[0].label == ["B-PER", "I-PER", "O", "O", "B-LOC", "O"]
    assert ex[0].where == f"{path}:3"
    assert ex[1].text[1] == "U.S." and ex[1].label[1] == "B-LOC"
    pos = read_conll(str(path), label_column=1)
    assert pos[0].label[:3] == ["NNP", "NNP", "VBZ"]


def test_read_errors(tmp_path):
    p = tmp_path / "bad.conll"
    p.write_text("John B-PER\nlives\n")
    with pytest.raises(ValueError, match=r"bad.conll:2: a word without a label"):
        read_conll(str(p))
    p.write_text("John B-PER\n")
    with pytest.raises(ValueError, match=r"bad.conll:1: expected a word in column 0 and a label in column 3"):
        read_conll(str(p), label_column=3)
    p.write_text("\n\n-DOCSTART- O\n")
    with pytest.raises(ValueError, match="no sentences"):
        read_conll(str(p))
