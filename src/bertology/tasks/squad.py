"""SQuAD v1.1 / v2.0: reading the JSON files, and the official evaluation's exact match and F1.

File layout: {"version": ..., "data": [{"title", "paragraphs": [{"context", "qas": [{"id",
"question", "answers": [{"text", "answer_start"}], "is_impossible" (v2.0)}]}]}]}.

Scoring follows the official scripts (evaluate-v1.1.py / evaluate-v2.0.py): both sides are
normalised (lower case, ASCII punctuation removed, the articles a / an / the removed, whitespace
collapsed); exact match compares the normalised strings, F1 the bags of their words; a
prediction gets the best score over the gold answers. For an unanswerable question the only
gold answer is "" and only the empty prediction scores. Totals are percentages.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter

from .base import Example
from ..readers import read_text

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """The official normalisation.

    >>> normalize_answer("The  Quick, brown fox!"), normalize_answer("an apple a day")
    ('quick brown fox', 'apple day')
    """
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal.

    >>> exact_match("the Eiffel Tower.", "Eiffel tower"), exact_match("Tower", "Eiffel Tower")
    (1.0, 0.0)
    """
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    """Word-bag F1 of the normalised strings; two empty answers agree, one empty scores 0.

    >>> f1("the Eiffel Tower in Paris", "Eiffel Tower"), f1("", ""), f1("x", "")
    (0.6666666666666666, 1.0, 0.0)
    """
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def gold_texts(answers: list[dict]) -> list[str]:
    """The gold answers a prediction is scored against ([""] when none normalises to anything).

    >>> gold_texts([{"text": "Paris"}, {"text": "the"}]), gold_texts([])
    (['Paris'], [''])
    """
    texts = [a["text"] for a in answers if normalize_answer(a["text"])]
    return texts or [""]


def score(predictions: dict[str, str], golds: dict[str, list[dict]]) -> dict[str, float]:
    """exact_match and f1 in percent over all questions; HasAns_* / NoAns_* when some have no answer.

    A question without a prediction scores 0 (the official script does the same, with a warning).

    >>> s = score({"q1": "Paris", "q2": ""}, {"q1": [{"text": "Paris"}], "q2": []})
    >>> s["exact_match"], s["HasAns_exact_match"], s["NoAns_f1"], s["total"]
    (100.0, 100.0, 100.0, 2.0)
    """
    em_by_id, f1_by_id = {}, {}
    for qid, answers in golds.items():
        pred = predictions.get(qid)
        if pred is None:
            em_by_id[qid] = f1_by_id[qid] = 0.0
            continue
        texts = gold_texts(answers)
        em_by_id[qid] = max(exact_match(pred, g) for g in texts)
        f1_by_id[qid] = max(f1(pred, g) for g in texts)

    def total(ids: list[str], prefix: str) -> dict[str, float]:
        n = len(ids)
        return {
            f"{prefix}exact_match": 100.0 * sum(em_by_id[i] for i in ids) / n if n else 0.0,
            f"{prefix}f1": 100.0 * sum(f1_by_id[i] for i in ids) / n if n else 0.0,
            f"{prefix}total": float(n),
        }

    out = total(list(golds), "")
    has = [q for q, a in golds.items() if a]  # as the official script: answerable = has gold answers
    no = [q for q, a in golds.items() if not a]
    if no:
        out.update(total(has, "HasAns_"))
        out.update(total(no, "NoAns_"))
    return out


def read_squad(path: str) -> tuple[list[Example], bool]:
    """(examples, version_2) from a SQuAD JSON file; version_2: the file may have unanswerable questions.

    Example: text = question, pair = context, label = [{"text", "start"}] ([] when unanswerable),
    id = question id. Every answer must occur in its context at answer_start (else a ValueError
    naming the file and question id); ids must be unique.
    """
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f"{path}: a SQuAD file is an object with a 'data' list of articles")
    version_2 = str(data.get("version", "")).startswith("v2") or str(data.get("version", "")).startswith("2")
    examples: list[Example] = []
    seen: set[str] = set()
    for a, article in enumerate(data["data"]):
        for p, para in enumerate(_get(article, "paragraphs", list, path, f"data[{a}]")):
            where = f"data[{a}].paragraphs[{p}]"
            context = _get(para, "context", str, path, where)
            if not context.strip():
                raise ValueError(f"{path}: {where}: empty context")
            for q, qa in enumerate(_get(para, "qas", list, path, where)):
                qid = str(_get(qa, "id", (str, int), path, f"{where}.qas[{q}]"))
                here = f"{path}: question {qid}"
                if qid in seen:
                    raise ValueError(f"{here}: duplicate question id")
                seen.add(qid)
                question = _get(qa, "question", str, path, f"question {qid}")
                if not question.strip():
                    raise ValueError(f"{here}: empty question")
                impossible = bool(qa.get("is_impossible", False))
                version_2 |= "is_impossible" in qa
                answers = [] if impossible else _get(qa, "answers", list, path, f"question {qid}")
                if not impossible and not answers:
                    raise ValueError(f"{here}: no answers and not marked is_impossible")
                label = []
                for k, ans in enumerate(answers):
                    text = _get(ans, "text", str, path, f"question {qid} answers[{k}]")
                    start = _get(ans, "answer_start", int, path, f"question {qid} answers[{k}]")
                    if not text or context[start : start + len(text)] != text:
                        raise ValueError(
                            f"{here}: answer {text!r} does not occur at answer_start={start} "
                            f"(the context there reads {context[start : start + len(text)]!r})"
                        )
                    label.append({"text": text, "start": start})
                examples.append(Example(question, context, label, id=qid, where=here))
    if not examples:
        raise ValueError(f"{path}: no questions")
    return examples, version_2


def _get(obj, key: str, kind, path: str, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise ValueError(f"{path}: {where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ValueError(f"{path}: {where}: {key!r} must be {names}, got {type(value).__name__}")
    return value
