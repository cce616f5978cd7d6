"""The fast encoder (encoder.py): the Tokenizer's general path, made faster, in one place; and the
word counting shortcuts of training (counting.py).

    encoder.py  FastEncoder: a sequence, a batch; which texts take which path
    words.py    WordCache (a model's tokens per word, memoized) and Flat (a batch's columns)
    models.py   a word's tokens as columns: BPE's and Unigram's shortcuts (Unigram's prefix tree)
    plain.py    plain_texts: the texts of a batch with no added token, normalized char for char
    splits.py   word_split: the pre-tokenizers that only keep a pattern's matches, as one split
    framed.py   frame_of / framed_encodings: post-processed, padded batches in one step
    counting.py word counting shortcuts for training (corpus.count_words)
    chunks.py   a file's whitespace-separated chunks counted as bytes (stdlib only: runs as a worker)
    workers.py  encode_batch over forked processes (its `workers=` argument)
"""

from .encoder import FastEncoder

__all__ = ["FastEncoder"]
