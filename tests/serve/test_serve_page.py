"""The page in a real headless Chromium, served by a real `bertology serve` process on 127.0.0.1:
type a sentence, press Enter, and the rendered answer, tokens and attention view are the API's.
Skipped when Chromium is absent, except in CI (CI=true), where that is a failure."""
import json
import os
import urllib.request

import pytest
from live import Chromium, Server, find_chromium

SENTENCE = "The cat sat on the [MASK]."


@pytest.fixture(scope="module")
def chromium_binary():
    binary = find_chromium()
    if binary is None:
        message = "Chromium is not installed (apt-get install chromium): the page test needs a real browser"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; in CI .ci/run installs it")
        pytest.skip(message)
    return binary


def post(url: str, body: dict):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def test_page_shows_the_answer_tokens_and_attention(checkpoints, chromium_binary, tmp_path):
    with Server(checkpoints["mlm"]) as server:
        browser = Chromium(chromium_binary, tmp_path / "profile")
        try:
            browser.open(server.url)
            browser.wait_for("document.body !== null && document.body.dataset.state === 'ready'")
            assert "BertForMaskedLM" in browser.evaluate("document.getElementById('model').textContent")
            browser.evaluate("document.getElementById('text').focus()")
            browser.type(SENTENCE)
            assert browser.evaluate("document.getElementById('text').value") == SENTENCE
            browser.press_enter()
            state = browser.wait_for("['done', 'error'].includes(document.body.dataset.state) && document.body.dataset.state")
            assert state == "done", browser.evaluate("document.getElementById('error').textContent")
            shown = browser.evaluate("""[...document.querySelectorAll('#answer .row')].map(r =>
                [r.querySelector('.label').textContent, r.querySelector('.num').textContent])""")
            tokens = browser.evaluate("[...document.querySelectorAll('#tokens span')].map(s => s.textContent)")
            layers = browser.wait_for("""(() => { const d = document.getElementById('attention').contentDocument;
                return d && d.getElementById('layer') && d.querySelectorAll('#grid td.c').length
                    && [d.getElementById('layer').options.length, d.getElementById('head').options.length,
                        d.querySelectorAll('#grid td.c').length]; })()""")
            png = browser.screenshot()
        finally:
            browser.close()
        expected = post(server.url + "fill-mask", {"inputs": SENTENCE, "top_k": 5})
        expected_tokens = post(server.url + "tokenize", {"inputs": SENTENCE})[0]
        assert server.terminate() == 0
    assert shown == [[c["token_str"], f"{100 * c['score']:.1f}%"] for c in expected[0]]
    assert tokens == [f"{t['text']} {t['id']}" for t in expected_tokens]
    assert layers == [2, 4, len(expected_tokens) ** 2]  # 2 layers, 4 heads, a T × T grid
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    shot = tmp_path / "serve-page.png"
    shot.write_bytes(png)
    if os.environ.get("BERTOLOGY_SCREENSHOT"):  # where to keep it (the README's picture comes from a real model)
        with open(os.environ["BERTOLOGY_SCREENSHOT"], "wb") as f:
            f.write(png)
