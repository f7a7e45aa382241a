"""Progress of a fit: a tqdm bar on a terminal, a plain line every few seconds in a file or pipe."""

from __future__ import annotations

import sys
import time

from tqdm.auto import tqdm


class _LineProgress:
    """Progress for a file or pipe: one plain line every ``interval`` seconds (no carriage returns).

    A line that falls due is printed at the next call, so a step that ends an epoch is printed
    with that epoch's values (the trainer sets them just after the step), not the previous one's.
    """

    def __init__(self, total: int, initial: int, interval: float = 5.0, stream=None):
        self.total, self.done, self.interval = total, initial, interval
        self.stream = stream or sys.stderr
        self.postfix = ""
        self._last = time.monotonic()
        self._due, self._printed = False, None

    def update(self, n: int) -> None:
        if self._due:
            self.close()
        self.done += n
        self._due = time.monotonic() - self._last >= self.interval

    def set_postfix(self, **values) -> None:
        self.postfix = " ".join(f"{k}={v}" for k, v in values.items())
        if self._due:
            self.close()

    def close(self) -> None:
        """Print the current line (also the last one, when training ends), unless it was the last printed."""
        self._last, self._due = time.monotonic(), False
        line = f"training: step {self.done}/{self.total} {self.postfix}"
        if line != self._printed:
            print(line, file=self.stream, flush=True)
            self._printed = line


def progress(total: int, initial: int, enabled: bool):
    """A tqdm bar on a terminal, plain lines every few seconds otherwise, or nothing."""
    if not enabled:
        return tqdm(total=total, initial=initial, disable=True)
    if sys.stderr.isatty():
        return tqdm(total=total, initial=initial, desc="training", unit="step", leave=False)
    return _LineProgress(total, initial)
