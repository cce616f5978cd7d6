"""SQuAD reading and the official exact match / F1, on known answers."""

import json

import pytest

from bertology.tasks.squad import exact_match, f1, normalize_answer, read_squad, score


@pytest.mark.parametrize(
    "raw,norm",
    [
        ("The Eiffel Tower", "eiffel tower"),  # case, article
        ("  an   apple,  a  day!  ", "apple day"),  # punctuation, articles, whitespace
        ("Theater", "theater"),  # "the" only as a whole word
        ("U.S.A.", "usa"),  # punctuation inside a word is removed, not a space
        ("rock-and-roll", "rockandroll"),
        ("A", ""),
        ("Tab\tand\nnewline", "tab and newline"),
        ("naïve café", "naïve café"),  # only ASCII punctuation, accents kept
    ],
)
def test_normalize(raw, norm):
    assert normalize_answer(raw) == norm


def test_exact_and_f1_known_values():
    assert exact_match("The Swiss Alps.", "swiss alps") == 1.0
    assert exact_match("Swiss Alps in winter", "the Swiss Alps") == 0.0
    # pred {swiss, alps, in, winter}, gold {swiss, alps}: P = 2/4, R = 2/2, F1 = 2/3
    assert f1("Swiss Alps in winter", "the Swiss Alps") == pytest.approx(2 / 3)
    # repeated words count with their multiplicity: pred [paris, paris] vs [paris]: P 1/2, R 1
    assert f1("Paris Paris", "Paris") == pytest.approx(2 / 3)
    assert f1("London", "Paris") == 0.0
    assert f1("", "") == 1.0 and f1("the", "") == 1.0 and f1("", "Paris") == 0.0


def test_score_takes_the_best_gold_and_breaks_down_no_answers():
    golds = {
        "q1": [{"text": "Denver Broncos"}, {"text": "the Broncos"}],  # best gold for "Broncos": the second
        "q2": [{"text": "1,230 kilometres"}],
        "q3": [],  # unanswerable
        "q4": [],
    }
    preds = {"q1": "Broncos", "q2": "about 1,230 kilometres", "q3": "", "q4": "Paris"}
    s = score(preds, golds)
    # q1: EM 1 (the Broncos -> broncos), F1 1. q2: EM 0, F1: P 2/3, R 1 -> 0.8. q3: 1/1. q4: 0/0.
    assert s["exact_match"] == pytest.approx(100 * 2 / 4)
    assert s["f1"] == pytest.approx(100 * (1 + 0.8 + 1 + 0) / 4)
    assert s["HasAns_exact_match"] == 50.0 and s["HasAns_f1"] == pytest.approx(90.0)
    assert s["NoAns_exact_match"] == 50.0 and s["NoAns_total"] == 2.0
    # v1.1 data (every question answerable): no breakdown; a missing prediction scores 0
    s1 = score({"q1": "Denver Broncos"}, {"q1": golds["q1"], "q2": golds["q2"]})
    assert s1 == {"exact_match": 50.0, "f1": 50.0, "total": 2.0}


def test_read_fixtures(fixtures_dir):
    ex, v2 = read_squad(str(fixtures_dir / "squad_v1.json"))
    assert not v2 and len(ex) == 19
    assert ex[0].id == "rhine-1" and ex[0].text == "Where does the Rhine rise?"
    assert ex[0].label == [{"text": "the Swiss Alps", "start": 35}, {"text": "Swiss Alps", "start": 39}]
    assert ex[0].pair.startswith("The Rhine is a river")
    ex2, v2 = read_squad(str(fixtures_dir / "squad_v2.json"))
    assert v2 and sum(not e.label for e in ex2) == 4


def _write(tmp_path, qas, context="Paris is in France.", version="1.1"):
    p = tmp_path / "s.json"
    p.write_text(
        json.dumps({"version": version, "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]})
    )
    return str(p)


def test_read_errors(tmp_path):
    with pytest.raises(ValueError, match=r"s.json: question q1: answer 'Paris' does not occur at answer_start=1"):
        read_squad(_write(tmp_path, [{"id": "q1", "question": "?", "answers": [{"text": "Paris", "answer_start": 1}]}]))
    with pytest.raises(ValueError, match=r"question q1: missing key 'question'"):
        read_squad(_write(tmp_path, [{"id": "q1", "answers": []}]))
    with pytest.raises(ValueError, match=r"question q1: no answers and not marked is_impossible"):
        read_squad(_write(tmp_path, [{"id": "q1", "question": "Where?", "answers": []}]))
    with pytest.raises(ValueError, match=r"question q1: duplicate question id"):
        qa = {"id": "q1", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 0}]}
        read_squad(_write(tmp_path, [qa, qa]))
    with pytest.raises(ValueError, match=r"'answer_start' must be int, got str"):
        read_squad(
            _write(tmp_path, [{"id": "q1", "question": "W?", "answers": [{"text": "Paris", "answer_start": "0"}]}])
        )
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="x.json: not valid JSON"):
        read_squad(str(p))
