"""Reading a corpus from Parquet and from a `datasets` directory: bertology's streaming reader against the
peers a user would otherwise call, on the Debian package descriptions (data/debian-descriptions) repeated to
--rows rows.

    python bench/tables.py [--rows 200000] [--rounds 5]

Per format, the texts of the 'text' column read start to finish (a text count and a character count, so
nothing is skipped): ours (bertology.tables.iter_texts: batches, nulls and blanks dropped) against
pyarrow's own batch iteration (the floor: no Python strings are made) and against `datasets`
(Dataset.from_parquet / load_from_disk, then .iter(batch_size)). Interleaved rounds, medians, each time
as a ratio to ours measured in the same round (robust to a busy machine). Prints the CPU line first.
Dataset.from_parquet converts the file to an Arrow cache in its first round and reads that cache after:
its median is a read of uncompressed Arrow, not of the Parquet file.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import lzma
import statistics
import tempfile
import time

import datasets
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

from bertology.hardware import cpu_summary
from bertology.tables import iter_texts, open_table

ROOT = Path(__file__).resolve().parents[1]
DESCRIPTIONS = ROOT / "data" / "debian-descriptions" / "descriptions.txt.xz"
BATCH = 1024


def texts(rows: int) -> list[str]:
    """The descriptions' documents (a blank line between them), cycled to `rows` texts."""
    docs = [d.strip() for d in lzma.open(DESCRIPTIONS, "rt", encoding="utf-8").read().split("\n\n") if d.strip()]
    return [docs[i % len(docs)] for i in range(rows)]


def count(strings) -> tuple[int, int]:
    n = chars = 0
    for s in strings:
        n += 1
        chars += len(s)
    return n, chars


def ours(path: Path) -> tuple[int, int]:
    return count(iter_texts(path, "text"))


def arrow_floor(path: Path) -> tuple[int, int]:
    """Batches only: lengths summed in Arrow, no Python string per row."""
    import pyarrow.compute as pc

    n = chars = 0
    for file in open_table(path).files:
        if str(file).endswith((".parquet", ".pq")):
            batches = pq.ParquetFile(file).iter_batches(batch_size=BATCH, columns=["text"])
        else:
            batches = pa.ipc.open_stream(pa.memory_map(str(file), "r"))
        for b in batches:
            column = b.column(b.schema.get_field_index("text"))
            n += len(column)
            chars += pc.sum(pc.utf8_length(column)).as_py() or 0
    return n, chars


def with_datasets(path: Path) -> tuple[int, int]:
    """A Parquet file is converted to an Arrow cache beside it on the first round (datasets' way), then reused."""
    ds = (
        datasets.Dataset.from_parquet(str(path), cache_dir=str(path.parent / "hf-cache"))
        if path.suffix == ".parquet"
        else datasets.load_from_disk(str(path))
    )
    return count(t for batch in ds.select_columns(["text"]).iter(batch_size=BATCH) for t in batch["text"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print("CPU:", cpu_summary(), flush=True)
    data = texts(args.rows)
    expect = (len(data), sum(map(len, data)))
    with tempfile.TemporaryDirectory() as tmp:
        parquet, saved = Path(tmp) / "corpus.parquet", Path(tmp) / "corpus-ds"
        datasets.disable_progress_bars()
        pq.write_table(pa.table({"text": data}), parquet, row_group_size=10_000)
        datasets.Dataset.from_dict({"text": data}).save_to_disk(str(saved), num_shards=4)
        readers = {"bertology": ours, "pyarrow batches (floor)": arrow_floor, "datasets": with_datasets}
        print(f"{args.rows:,} texts, {expect[1]:,} characters; {args.rounds} interleaved rounds, medians")
        print("| format | reader | texts/s | time vs bertology |\n|---|---|---|---|")
        for name, path in (("parquet", parquet), ("save_to_disk", saved)):
            times: dict[str, list[float]] = {r: [] for r in readers}
            for _ in range(args.rounds):
                for reader, fn in readers.items():
                    start = time.perf_counter()
                    got = fn(path)
                    times[reader].append(time.perf_counter() - start)
                    assert got == expect, f"{reader} on {name}: {got} != {expect}"
            ratios = {r: statistics.median(t / o for t, o in zip(times[r], times["bertology"])) for r in readers}
            for reader in readers:
                rate = args.rows / statistics.median(times[reader])
                print(f"| {name} | {reader} | {rate:,.0f} | {ratios[reader]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
