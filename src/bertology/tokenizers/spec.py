"""TokenizerSpec: the parts of a tokenizer as a file describes them, before a Tokenizer is built.

Every file reader returns one (tokenizer_json.py, vocab_files.py, sentencepiece_model.py;
loading.py picks the reader for a path), and `Tokenizer.from_spec` builds the Tokenizer. So the
readers know file formats and nothing of the Tokenizer, and imports point one way:
readers -> spec -> components, and tokenizer -> loading -> readers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .added_tokens import AddedToken
from .base import Model
from .decoders import Decoder
from .normalized_string import Normalizer
from .post_processors import PostProcessor
from .pre_tokenizers import PreTokenizer


@dataclass
class TokenizerSpec:
    model: Model
    normalizer: Normalizer | None = None
    pre_tokenizer: PreTokenizer | None = None
    post_processor: PostProcessor | None = None
    decoder: Decoder | None = None
    added_tokens: list[AddedToken] = field(default_factory=list)
    added_ids: list[int] | None = None  # one per added token; None: the model's id, or the next free one
    truncation: dict | None = None  # keywords of truncation.truncation_settings
    padding: dict | None = None  # keywords of truncation.padding_settings
