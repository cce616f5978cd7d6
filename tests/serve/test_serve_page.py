"""The page in a real headless Chromium, served by a real `bertology serve` process on 127.0.0.1:
type a sentence, press Enter, and the rendered answer, tokens and attention view are the API's.
Skipped when Chromium is absent, except in CI (CI=true), where that is a failure."""

import json
import os
import urllib.request

import pytest
from live import Chromium, Server, find_chromium

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

SENTENCE = "The cat sat on the [MASK]."


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    binary = find_chromium()
    if binary is None:
        message = "Chromium is not installed (apt-get install chromium): the page test needs a real browser"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; in CI .ci/run installs it")
        pytest.skip(message)
    browser = Chromium(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.close()


def post(url: str, body: dict):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def ask(browser: Chromium, url: str, text: str, **fields: str) -> None:
    """Open the page, type `text` (and fill the other fields: pair, context), press Enter, wait for the answer."""
    browser.open(url)
    browser.wait_for("document.body !== null && document.body.dataset.state === 'ready'")
    for field, value in fields.items():
        browser.evaluate(f"document.getElementById({field!r}).value = {json.dumps(value)}")
    browser.evaluate("document.getElementById('text').focus()")
    browser.type(text)
    assert browser.evaluate("document.getElementById('text').value") == text
    browser.press_enter()
    state = browser.wait_for("['done', 'error'].includes(document.body.dataset.state) && document.body.dataset.state")
    assert state == "done", browser.evaluate("document.getElementById('error').textContent")


def bars(browser: Chromium) -> list[list[str]]:
    return browser.evaluate("""[...document.querySelectorAll('#answer .row')].map(r =>
        [r.querySelector('.label').textContent, r.querySelector('.num').textContent])""")


def marks(browser: Chromium) -> list[str]:
    return browser.evaluate("[...document.querySelectorAll('#answer mark')].map(m => m.textContent)")


def test_page_shows_the_answer_tokens_and_attention(checkpoints, browser, tmp_path):
    with Server(checkpoints["mlm"]) as server:
        ask(browser, server.url, SENTENCE)
        assert "BertForMaskedLM" in browser.evaluate("document.getElementById('model').textContent")
        shown = bars(browser)
        tokens = browser.evaluate("[...document.querySelectorAll('#tokens span')].map(s => s.textContent)")
        layers = browser.wait_for("""(() => { const d = document.getElementById('attention').contentDocument;
            return d && d.getElementById('layer') && d.querySelectorAll('#grid td.c').length
                && [d.getElementById('layer').options.length, d.getElementById('head').options.length,
                    d.querySelectorAll('#grid td.c').length]; })()""")
        png = browser.screenshot()
        expected = post(server.url + "fill-mask", {"inputs": SENTENCE, "top_k": 5})
        expected_tokens = post(server.url + "tokenize", {"inputs": SENTENCE})[0]
        assert server.terminate() == 0
    assert shown == [[c["token_str"], f"{100 * c['score']:.1f}%"] for c in expected[0]]
    assert tokens == [f"{t['text']} {t['id']}" for t in expected_tokens]
    assert layers == [2, 4, len(expected_tokens) ** 2]  # 2 layers, 4 heads, a T × T grid
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    (tmp_path / "serve-page.png").write_bytes(png)
    if os.environ.get("BERTOLOGY_SCREENSHOT"):  # where to keep it (the README's picture comes from a real model)
        with open(os.environ["BERTOLOGY_SCREENSHOT"], "wb") as f:
            f.write(png)


def test_page_for_a_classifier_and_a_pair_model(checkpoints, browser):
    with Server(checkpoints["classify"]) as server:
        ask(browser, server.url, "A game with falling blocks")
        expected = post(server.url + "predict", {"inputs": "A game with falling blocks"})
        assert bars(browser) == [[r["label"], f"{100 * r['score']:.1f}%"] for r in expected]
    with Server(checkpoints["pair"]) as server:
        ask(browser, server.url, "The cat sat.", pair="It was tired.")
        expected = post(server.url + "predict", {"inputs": ["The cat sat.", "It was tired."]})
        assert bars(browser) == [[r["label"], f"{100 * r['score']:.1f}%"] for r in expected]


def test_page_for_a_tagger_and_a_reader(checkpoints, browser):
    text = "John Smith lives in New York City with Mary Jones"
    with Server(checkpoints["tag"]) as server:
        ask(browser, server.url, text)
        entities = post(server.url + "tag", {"inputs": text})
        assert entities and marks(browser) == [f"{e['word']} {e['entity_group']}" for e in entities]
    context = "The cat sat on the mat in the garden behind the old house."
    with Server(checkpoints["qa"]) as server:
        ask(browser, server.url, "Where did the cat sit?", context=context)
        answer = post(server.url + "qa", {"question": "Where did the cat sit?", "context": context})
        assert marks(browser) == [answer["answer"]]
        assert answer["answer"] in browser.evaluate("document.getElementById('answer-title').textContent")


def test_page_asks_for_the_key_of_a_keyed_server(checkpoints, browser):
    with Server(checkpoints["classify"], "--api-key", "page-key-1") as server:
        browser.open(server.url)
        browser.wait_for("document.body !== null && document.body.dataset.state === 'key'")
        assert browser.evaluate("document.getElementById('form').hidden && !document.getElementById('keyform').hidden")
        browser.evaluate("document.getElementById('key').value = 'wrong'")
        browser.evaluate("document.getElementById('usekey').click()")
        browser.wait_for("document.getElementById('error').textContent.includes('unauthorized')")
        browser.evaluate("document.getElementById('key').value = 'page-key-1'")
        browser.evaluate("document.getElementById('usekey').click()")
        browser.wait_for("document.body.dataset.state === 'ready'")
        browser.evaluate("document.getElementById('text').focus()")
        browser.type("A game with falling blocks")
        browser.press_enter()
        assert (
            browser.wait_for("['done', 'error'].includes(document.body.dataset.state) && document.body.dataset.state")
            == "done"
        )
        request = urllib.request.Request(
            server.url + "predict",
            json.dumps({"inputs": "A game with falling blocks"}).encode(),
            {"Content-Type": "application/json", "Authorization": "Bearer page-key-1"},
        )
        with urllib.request.urlopen(request, timeout=60) as r:
            expected = json.loads(r.read())
        assert bars(browser) == [[r["label"], f"{100 * r['score']:.1f}%"] for r in expected]
