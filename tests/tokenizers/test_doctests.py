"""The docstring examples of the modules whose own tests do not run them."""
import doctest
import importlib

import pytest

MODULES = ["bertology.io", "bertology.tokenizers.normalizers", "bertology.tokenizers.fast.models",
           "bertology.tokenizers.fast.plain", "bertology.tokenizers.fast.splits", "bertology.tokenizers.fast.words"]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
