from pathlib import Path

import pytest

gensim = pytest.importorskip("gensim")
TEST_DATA = Path(gensim.__file__).parent / "test" / "test_data"


@pytest.fixture(scope="session")
def test_data() -> Path:
    return TEST_DATA


@pytest.fixture(scope="session")
def lee_sentences() -> list[list[str]]:
    """gensim's Lee background corpus (~60,000 words), lowercased, one sentence a line."""
    with open(TEST_DATA / "lee_background.cor", encoding="utf-8") as f:
        return [line.lower().split() for line in f if line.strip()]
