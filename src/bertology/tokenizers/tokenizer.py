"""The Tokenizer: Normalizer -> PreTokenizer -> Model -> PostProcessor -> Decoder.

(Work in progress: the constructor signature below is the agreed one.)
"""
from __future__ import annotations

from .base import Model


class Tokenizer:
    def __init__(self, model: Model, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self.truncation: dict | None = None
        self.padding: dict | None = None
