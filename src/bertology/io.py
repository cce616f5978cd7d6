"""The one atomic writer: a killed job never leaves a half-written file or directory, and an
output directory is only ever written by the command that claimed it; and the one opener of
corpus files (`open_corpus`: .gz, .xz and .bz2 decompressed as they stream, by extension only),
with `iter_lines` / `iter_files` streaming their UTF-8 lines.

    >>> with atomic_path("out/model.safetensors") as tmp:   # doctest: +SKIP
    ...     save_file(tensors, tmp)                          # renamed onto the target only on success
    >>> with atomic_dir("out/checkpoints/step-00000100") as tmp:   # doctest: +SKIP
    ...     model.save(tmp)                                  # the whole directory appears at once
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import shutil
import sys
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from .tables import DEFAULT_TEXT_COLUMN, open_table, table_format, table_lines

# Written into every output directory a command creates: what lets a later run (--resume,
# --overwrite) tell a directory of ours from one of the user's.
RUN_MARKER = ".bertology-run.json"


def current_umask() -> int:
    """The process umask now (read on every call: the user may change it while we run).

    Linux shows it in /proc/self/status, which reads it without changing it. Elsewhere the only way is
    os.umask's set-and-restore, during which a file another thread creates would get umask 0: kept
    to this one helper so that window is as short as it can be.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def mode_under(umask: int, *, directory: bool = False) -> int:
    """The mode a plain open() (0o666) or mkdir (0o777) gives under `umask`.

    >>> oct(mode_under(0o022)), oct(mode_under(0o077, directory=True))
    ('0o644', '0o700')
    """
    return (0o777 if directory else 0o666) & ~umask


def plain_mode(*, directory: bool = False) -> int:
    """The mode a plain open() or mkdir would give now, under the process umask."""
    return mode_under(current_umask(), directory=directory)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it onto `path` only if the block succeeds.

    The file ends with the mode a plain open() would give (mkstemp makes it 0600, which would
    leave every file we write unreadable to a teammate or a serving container under another user).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, plain_mode())  # after the block: a writer may have replaced the file we made
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def atomic_copy(source: str | os.PathLike, target: str | os.PathLike) -> None:
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


@contextmanager
def atomic_dir(final: str | os.PathLike, *, exists: str = "error") -> Iterator[Path]:
    """Yield an empty temporary directory next to `final`; on success it becomes `final` in one rename.

    `exists` says what to do when `final` is already there at the end: "error" (FileExistsError),
    "replace" (the old directory is moved aside first and removed only after the rename), or
    "keep" (a concurrent builder got there first: its result stays, ours is discarded).
    On failure the temporary directory is removed and `final` is as it was.
    The directory ends with the mode a plain mkdir would give (mkdtemp makes it 0700).
    """
    if exists not in ("error", "replace", "keep"):
        raise ValueError(f"exists={exists!r}; choose error, replace or keep")
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".tmp-{final.name}-"))
    try:
        yield tmp
        os.chmod(tmp, plain_mode(directory=True))
        if final.exists() and exists == "replace":
            old = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".old-{final.name}-"))
            os.replace(final, old / final.name)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
            return
        try:
            os.replace(tmp, final)  # fails on an existing non-empty directory
        except OSError:
            if not final.exists():
                raise
            if exists == "error":
                raise FileExistsError(f"{final}: already exists") from None
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def stdin_lines(command: str) -> list[str]:
    """The non-blank lines piped to a command given no text (`cat texts.txt | bertology predict …`); a ValueError
    when stdin is a terminal, where waiting for input would look like a hang."""
    if sys.stdin is None or sys.stdin.isatty():
        raise ValueError(f"{command}: no text given: pass TEXT arguments, or pipe texts on stdin, one per line")
    return [line.rstrip("\r\n") for line in sys.stdin if line.strip()]


def is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def claim_output_dir(path: str | os.PathLike, command: str, *, resume: bool = False, overwrite: bool = False) -> Path:
    """Check `path` before anything is written, then mark it as this command's output directory.

    A missing or empty directory is taken. A directory holding files this project did not write
    (no RUN_MARKER) is refused unless `overwrite`: the user's files are never replaced silently.
    One of ours is taken with `resume` (continue) or `overwrite` (write over our own files);
    otherwise refused, so an earlier run is not mixed with a new one.
    Raises FileExistsError / NotADirectoryError naming the path and the way out.
    """
    path = Path(path)
    for parent in [path, *path.parents]:
        if parent.exists() and not parent.is_dir():
            raise NotADirectoryError(f"{path}: {parent} is a file, not a directory")
    marker = path / RUN_MARKER
    if path.is_dir() and not is_empty_dir(path):
        ours = marker.is_file()
        if not ours and not overwrite:
            raise FileExistsError(
                f"{path}: not empty and not written by bertology; choose another --out, "
                "or pass --overwrite to write into it anyway (files of the same names are replaced)"
            )
        if ours and not (resume or overwrite):
            raise FileExistsError(
                f"{path}: holds an earlier {_command_of(marker)} run; continue it with --resume, "
                "start again with --overwrite, or choose another --out"
            )
        if ours and resume and _command_of(marker) != command:
            raise FileExistsError(
                f"{path}: holds a {_command_of(marker)} run, which {command} --resume cannot continue"
            )
    elif resume:
        raise FileNotFoundError(f"{path}: nothing to resume (no earlier run there)")
    path.mkdir(parents=True, exist_ok=True)
    if not marker.is_file():
        atomic_write_json(marker, {"command": command})
    return path


def _command_of(marker: Path) -> str:
    try:
        return str(json.loads(marker.read_text(encoding="utf-8")).get("command", "bertology"))
    except (OSError, ValueError, AttributeError):
        return "bertology"


# -- corpus files: plain or compressed text, streamed ------------------------------------------

_ERRORS = ("strict", "replace")


class CorpusError(ValueError):
    """Unreadable training text: names the file and the byte offset at fault. `invalid_utf8` marks an
    undecodable byte, which a command that can replace such bytes adds its own option to the message for."""

    invalid_utf8 = False


# What a folder given as a corpus is read for: text (these suffixes, each optionally .gz / .xz / .bz2), Parquet
# files and datasets directories. Anything else in it (a README.md, a .json, .arrow shards outside a dataset) is
# skipped and said, so a folder can hold notes beside its text without them being trained on.
TEXT_SUFFIXES = (".txt", ".text", ".raw")


def corpus_kind(path: str | os.PathLike) -> str | None:
    """ "text", "parquet" or "dataset" for a file or directory a corpus folder is read for, else None.

    >>> corpus_kind("wiki.txt.gz"), corpus_kind("part-0.parquet"), corpus_kind("README.md")
    ('text', 'parquet', None)
    """
    table = table_format(path)
    if table:
        return table
    name = os.path.basename(os.fspath(path)).lower()
    if compression(name):
        name = name[: name.rindex(".")]
    return "text" if os.path.splitext(name)[1] in TEXT_SUFFIXES else None


def _folder_sources(root: Path) -> tuple[list[Path], list[Path]]:
    """(corpus sources, other files) under `root`, each sorted by its path below `root`; hidden names (and
    what is under them) are left out of both. A datasets directory is one source: its shards are not walked."""
    found, other = [], []
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for d in list(dirs):
            if table_format(os.path.join(top, d)) == "dataset":
                found.append(Path(top, d))
                dirs.remove(d)
        for n in names:
            if not n.startswith("."):
                (found if corpus_kind(os.path.join(top, n)) else other).append(Path(top, n))
    return sorted(found, key=lambda f: f.relative_to(root).as_posix()), other


def corpus_files(paths: Iterable[str | os.PathLike], say=None) -> list[str]:
    """`paths` with each directory replaced by the corpus sources under it, found recursively, in name order:
    text files (.txt, .text, .raw, each maybe .gz / .xz / .bz2), Parquet files and datasets directories
    (`corpus_kind`). Hidden names are left out; other files are skipped and `say(note)` is told how many and
    their suffixes, with what each directory became. A file stays as it is, and so does a directory `datasets`
    saved (tables.table_format), which is read as one table. A directory with no corpus source is a CorpusError.

    >>> corpus_files(["notes.txt"])
    ['notes.txt']
    """
    files: list[str] = []
    for p in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        if not os.path.isdir(p) or table_format(p):  # a datasets directory is one table, not a folder of files
            files.append(os.fspath(p))
            continue
        root = Path(p)
        found, other = _folder_sources(root)
        suffixes = sorted({f.suffix.lower() or "(no suffix)" for f in other})
        skipped = f"; skipped {len(other)} file(s) of other kinds ({', '.join(suffixes)})" if other else ""
        if not found and not other:
            raise CorpusError(f"{os.fspath(p)}: a directory with no files in it")
        if not found:
            raise CorpusError(
                f"{os.fspath(p)}: a directory with no corpus file in it (text: {', '.join(TEXT_SUFFIXES)}, maybe "
                f".gz / .xz / .bz2; .parquet, .pq; a datasets directory){skipped}"
            )
        files.extend(map(str, found))
        if say is not None:
            names = [f.relative_to(root).as_posix() for f in found]
            shown = ", ".join(names[:3]) + (
                f", … {names[-1]}" if len(names) > 4 else "".join(f", {n}" for n in names[3:])
            )
            say(f"{os.fspath(p)}: a directory: reading its {len(found)} file(s) in name order ({shown}){skipped}")
    return files


def check_corpus_paths(files: Iterable[str | os.PathLike]) -> list[str]:
    """The paths, each checked to be a readable file: a missing one and a directory get their own message."""
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    for p in files:
        if table_format(p):  # read as text it would be bytes of Arrow / Parquet, or a directory
            raise CorpusError(
                f"{os.fspath(p)}: a table (Parquet or a datasets directory), not a text file; the "
                "commands read its text column (--text-column, default 'text'); from Python, "
                "bertology.tables.iter_texts(path, column)"
            )
        if os.path.isdir(p):
            raise CorpusError(
                f"{os.fspath(p)}: a directory, not a file (the commands read the files in a directory; "
                "from Python, pass bertology.io.corpus_files([DIR]))"
            )
        if not os.path.isfile(p):
            raise CorpusError(f"{os.fspath(p)}: no such file")
    return [os.fspath(p) for p in files]


# extension -> (name in messages, opener, the exceptions its decoder raises on bad data).
# bz2 reports a bad stream as an OSError without errno; a real I/O error has one.
_COMPRESSIONS = {
    ".gz": ("gzip", gzip.open, (gzip.BadGzipFile, zlib.error, EOFError)),
    ".xz": ("xz", lzma.open, (lzma.LZMAError, EOFError)),
    ".bz2": ("bz2", bz2.open, (OSError, EOFError)),
}


def _compression_entry(path) -> tuple | None:
    return _COMPRESSIONS.get(os.path.splitext(os.fspath(path))[1].lower())


def compression(path: str | os.PathLike) -> str | None:
    """ "gzip", "xz" or "bz2" when the file name ends in .gz, .xz or .bz2 (any case), else None.

    >>> compression("wiki.txt.xz"), compression("wiki.txt")
    ('xz', None)
    """
    entry = _compression_entry(path)
    return entry[0] if entry else None


def open_corpus(path: str | os.PathLike) -> BinaryIO:
    """Open a corpus file for streaming binary reading, decompressing .gz / .xz / .bz2 files.

    The one opener for corpus files: use it as a context manager. Errors in the compressed data
    surface while reading; `iter_lines` turns them into CorpusError naming the file.
    """
    entry = _compression_entry(path)
    return entry[1](path, "rb") if entry else open(path, "rb")


def _is_corrupt_stream(path, exc: BaseException) -> bool:
    entry = _compression_entry(path)
    if entry is None or not isinstance(exc, entry[2]):
        return False
    return not (type(exc) is OSError and exc.errno is not None)  # bz2: a real I/O error is not corruption


def iter_lines(
    path: str | os.PathLike, errors: str = "strict", keep_newlines: bool = True, start: int = 0, end: int | None = None
) -> Iterator[str]:
    """Stream the lines of a UTF-8 file (no whole-file read); optionally only the lines that
    begin in the byte range [start, end) (start must be 0 or just after a newline).

    A .gz, .xz or .bz2 file is decompressed as it streams (see `open_corpus`); its offsets,
    start and end included, count decompressed bytes. A corrupt or truncated compressed stream
    raises CorpusError naming the file and the format. With errors="strict" an undecodable byte
    raises CorpusError naming the file and the byte offset; errors="replace" substitutes U+FFFD
    instead.
    """
    if errors not in _ERRORS:
        raise ValueError(f"errors must be one of {_ERRORS}, got {errors!r}")
    kind = compression(path)
    where = "decompressed byte offset" if kind else "byte offset"
    offset = start
    with open_corpus(path) as f:
        try:
            if start:
                f.seek(start)
            for raw in f:
                if end is not None and offset >= end:
                    break
                try:
                    line = raw.decode("utf-8", errors)
                except UnicodeDecodeError as e:
                    bad = raw[e.start : e.end]
                    error = CorpusError(
                        f"{os.fspath(path)}: {where} {offset + e.start}: invalid UTF-8 byte(s) "
                        f"{bad!r} ({e.reason}); convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)"
                    )
                    error.invalid_utf8 = True
                    raise error from None
                offset += len(raw)
                yield line if keep_newlines else line.rstrip("\r\n")
        except Exception as e:
            if not _is_corrupt_stream(path, e):
                raise
            raise CorpusError(
                f"{os.fspath(path)}: corrupt or truncated {kind} stream after {offset} decompressed bytes: {e}"
            ) from e


def corpus_lines(
    files: Iterable[str | os.PathLike], text_column: str = DEFAULT_TEXT_COLUMN, errors: str = "strict"
) -> Iterator[str]:
    """The lines of text files and of tables (a Parquet file, a datasets directory: the values of their
    `text_column`, see tables.table_lines), in order; every path is checked before the first line is read."""
    files = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    if not files:
        raise CorpusError("no training files given")
    check_corpus_paths([f for f in files if not table_format(f)])
    for p in files:
        if table_format(p):
            open_table(p).require_text(text_column)
    for p in files:
        yield from table_lines(p, text_column) if table_format(p) else iter_lines(p, errors)


def iter_files(files: Iterable[str | os.PathLike], errors: str = "strict", keep_newlines: bool = True) -> Iterator[str]:
    """Lines of several files in order; a missing file fails before any reading starts."""
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    if not files:
        raise CorpusError("no training files given")
    check_corpus_paths(files)
    for p in files:
        yield from iter_lines(p, errors, keep_newlines)
