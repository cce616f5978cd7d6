"""`bertology.wordvec` exports its classes and functions lazily: each name is the object itself, not a
submodule, however the submodules were imported before."""

import importlib

import bertology.wordvec as wordvec


def test_every_export_is_the_object_even_after_its_module_is_imported():
    for module in sorted(set(wordvec._EXPORTS.values())):
        importlib.import_module(f"bertology.wordvec.{module}")  # as the CLI or a user's own import would
    for name, module in wordvec._EXPORTS.items():
        value = getattr(wordvec, name)
        assert value is getattr(importlib.import_module(f"bertology.wordvec.{module}"), name), name
        assert not isinstance(value, type(wordvec)), f"bertology.wordvec.{name} is a module"
