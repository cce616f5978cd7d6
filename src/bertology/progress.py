"""Progress bars that suit where the output goes: tqdm's bar on a terminal; in a log file
(`make demo > log`) whole lines, one per tenth of the way and at most one a minute in between,
never a carriage return.

    >>> import io
    >>> log = io.StringIO()
    >>> with progress_bar(total=20, desc="count", unit="step", file=log, mininterval=0, delay=0) as bar:
    ...     for _ in range(20):
    ...         _ = bar.update(1)
    >>> lines = log.getvalue().splitlines()
    >>> len(lines), "\\r" in log.getvalue(), lines[-1].startswith("count: 100%")
    (10, False, True)
"""

from __future__ import annotations

import sys
import time

from tqdm import tqdm

LINE_EVERY_S = 60.0
QUIET_FIRST_S = 5.0  # a phase shorter than this says nothing in a log
_LEFT = "{desc}: {percentage:3.0f}% "  # tqdm's l_bar without the bar's opening "|"


class LineProgress(tqdm):
    """tqdm's counting and formatting, written as whole lines: at each tenth of a known total, every
    LINE_EVERY_S seconds otherwise, and once at the end; nothing for a phase over in QUIET_FIRST_S."""

    def __init__(self, *args, **kwargs):
        self._line_at = -float("inf")  # when the last line was written (monotonic seconds)
        self._tenth = -1  # the last tenth of the total a line was written for
        self._line_n = 0  # the count the last line was written at (nothing is said before a start)
        kwargs.setdefault("mininterval", 0.5)  # how often tqdm asks to redraw; lines are rarer still
        kwargs.setdefault("delay", QUIET_FIRST_S)
        kwargs.pop("dynamic_ncols", None)
        # a log gets the numbers without the bar's drawing
        if kwargs.get("total") is not None or kwargs.get("bar_format"):  # (tqdm draws no bar without a total)
            form = kwargs.get("bar_format") or "{l_bar}{bar}{r_bar}"
            kwargs["bar_format"] = form.replace("{l_bar}{bar}", _LEFT).replace("{bar}| ", "").replace("{bar}", "")
        super().__init__(*args, **kwargs)

    def display(self, msg=None, pos=None):
        if msg == "":
            return True
        now = time.monotonic()
        tenth = int(10 * self.n / self.total) if self.total else -1
        if tenth > self._tenth or now - self._line_at >= LINE_EVERY_S:
            self._write_line(msg or str(self))
            self._line_at, self._tenth = now, tenth
        return True

    def _write_line(self, text: str) -> None:
        text = text.strip()
        if text and self.n != self._line_n:
            self.fp.write(text + "\n")
            self.fp.flush()
            self._line_n = self.n

    def close(self):
        if not self.disable and getattr(self, "last_print_t", -1) >= self.start_t + self.delay:
            self._write_line(str(self))
            self.sp = None  # tqdm's close writes nothing more (it would end the line with "\n" or "\r")
        super().close()


def progress_bar(iterable=None, *, file=None, disable: bool = False, **kwargs) -> tqdm:
    """A tqdm bar where `file` (default stderr) is a terminal, a LineProgress elsewhere."""
    file = sys.stderr if file is None else file
    is_terminal = getattr(file, "isatty", lambda: False)()
    return (tqdm if is_terminal else LineProgress)(iterable, file=file, disable=disable, **kwargs)
