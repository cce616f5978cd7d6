"""A 2-D PCA picture of chosen word vectors, as the word2vec paper's figure of countries and
their capitals: each country joined to its capital by a line."""

from __future__ import annotations

import os

import numpy as np

from ..io import atomic_path
from .vectors import KeyedVectors

COUNTRIES_CAPITALS = [
    ("china", "beijing"),
    ("russia", "moscow"),
    ("japan", "tokyo"),
    ("germany", "berlin"),
    ("france", "paris"),
    ("italy", "rome"),
    ("spain", "madrid"),
    ("greece", "athens"),
    ("turkey", "ankara"),
    ("poland", "warsaw"),
    ("portugal", "lisbon"),
    ("egypt", "cairo"),
    ("canada", "ottawa"),
    ("australia", "canberra"),
    ("england", "london"),
    ("iran", "tehran"),
]


def pca_2d(x: np.ndarray) -> np.ndarray:
    """Rows of x projected on their first two principal components (by SVD of the centred rows).

    >>> np.abs(pca_2d(np.array([[0., 0, 0], [2, 0, 0], [4, 0, 0]]))[:, 0]).round(6).tolist()
    [2.0, 0.0, 2.0]
    """
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    projected = centred @ vt[:2].T
    signs = np.sign(projected[np.abs(projected).argmax(axis=0), range(projected.shape[1])])
    return projected * np.where(signs == 0, 1, signs)  # a fixed sign per axis, for stable pictures


def plot_pairs(
    kv: KeyedVectors, path: str | os.PathLike, pairs: list[tuple[str, str]] = COUNTRIES_CAPITALS, title: str = ""
) -> list[tuple[str, str]]:
    """Draw the pairs whose two words are known (case-insensitive lookup, as in evaluation); returns
    the pairs drawn. Raises ValueError when fewer than two pairs are known."""
    lookup = {w.lower(): w for w in reversed(kv.index_to_key)}
    known = [(a, b) for a, b in pairs if a.lower() in lookup and b.lower() in lookup]
    if len(known) < 2:
        raise ValueError(f"only {len(known)} of the {len(pairs)} word pairs are in the vocabulary; nothing to draw")
    words = [lookup[w.lower()] for pair in known for w in pair]
    xy = pca_2d(np.stack([kv[w] for w in words]).astype(np.float64))
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure registry

    fig = Figure(figsize=(7, 6))
    ax = fig.subplots()
    for k in range(len(known)):
        (x0, y0), (x1, y1) = xy[2 * k], xy[2 * k + 1]
        ax.plot([x0, x1], [y0, y1], color="0.75", linestyle="--", linewidth=0.8)
        ax.scatter([x0], [y0], color="tab:blue", s=14)
        ax.scatter([x1], [y1], color="tab:red", s=14)
        ax.annotate(words[2 * k], (x0, y0), fontsize=8, color="tab:blue", xytext=(3, 2), textcoords="offset points")
        ax.annotate(words[2 * k + 1], (x1, y1), fontsize=8, color="tab:red", xytext=(3, 2), textcoords="offset points")
    ax.set_title(title or "countries (blue) and capitals (red): 2-D PCA of the word vectors")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    return known
