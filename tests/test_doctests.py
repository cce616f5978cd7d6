"""Every module's docstring examples run and hold (the algorithm cores' examples are part of their contract)."""

import doctest
import importlib
import pkgutil

import pytest

import bertology

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(bertology.__path__, "bertology.") if not m.name.endswith("__main__")
)  # importing __main__ runs the CLI


@pytest.mark.parametrize("module", ["bertology", *MODULES])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
