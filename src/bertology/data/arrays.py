"""Arrays on disk: append-only raw little-endian files plus a meta.json, built atomically.

A directory holds one `NAME.bin` per array; meta.json records each array's dtype and shape.
`build_cached(final, build)` runs `build` in a temporary directory renamed into place with its
meta.json, so a killed build leaves nothing half-written and a finished one is reused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..io import atomic_dir

_FLUSH = 4096  # rows buffered per array before a write


class ArrayWriter:
    """Append-only arrays on disk (raw bytes; shape and dtype go to meta.json)."""

    def __init__(self, directory: Path, spec: dict[str, tuple[str, tuple[int, ...]]]):
        self.dir, self.spec = directory, spec
        self.files = {k: open(directory / f"{k}.bin", "wb") for k in spec}
        self.buffers: dict[str, list] = {k: [] for k in spec}
        self.n = {k: 0 for k in spec}

    def add(self, **rows) -> None:
        for k, v in rows.items():
            self.buffers[k].append(v)
            if len(self.buffers[k]) >= _FLUSH:
                self._flush(k)

    def extend(self, key: str, values) -> None:
        self._flush(key)
        arr = np.asarray(values, dtype=self.spec[key][0])
        self.files[key].write(arr.tobytes())
        self.n[key] += len(arr)

    def _flush(self, k: str) -> None:
        if self.buffers[k]:
            arr = np.asarray(self.buffers[k], dtype=self.spec[k][0])
            self.files[k].write(arr.tobytes())
            self.n[k] += len(arr)
            self.buffers[k] = []

    def close(self) -> dict:
        """The arrays' dtypes and shapes, for meta.json."""
        arrays = {}
        for k, f in self.files.items():
            self._flush(k)
            f.close()
            dtype, row_shape = self.spec[k]
            arrays[k] = {"dtype": dtype, "shape": [self.n[k], *row_shape]}
        return arrays


def open_arrays(directory: Path, arrays: dict) -> dict[str, np.ndarray]:
    """The arrays meta.json lists, memory-mapped read-only."""
    out = {}
    for k, a in arrays.items():
        shape = tuple(a["shape"])
        if shape[0] == 0:
            out[k] = np.zeros(shape, dtype=a["dtype"])
        else:
            out[k] = np.memmap(directory / f"{k}.bin", dtype=a["dtype"], mode="r", shape=shape)
    return out


def build_cached(final: Path, build) -> Path:
    """Run build(tmp_dir) -> meta into a temporary directory that becomes `final` with meta.json in
    one rename; a finished `final` (or one a concurrent builder finished first) is used as it is."""
    if (final / "meta.json").exists():
        return final
    with atomic_dir(final, exists="keep") as tmp:
        meta = build(tmp)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    return final


def digest(obj) -> str:
    """A short stable hash of a JSON-able object: the cache key of a build."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]
