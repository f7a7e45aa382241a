"""Progress of a fit: a tqdm bar on a terminal, a plain line every few seconds in a file or pipe."""

from __future__ import annotations

import sys
import time

from tqdm.auto import tqdm


class _LineProgress:
    """Progress for a file or pipe: one plain line every ``interval`` seconds (no carriage returns)."""

    def __init__(self, total: int, initial: int, interval: float = 5.0, stream=None):
        self.total, self.done, self.interval = total, initial, interval
        self.stream = stream or sys.stderr
        self.postfix = ""
        self._last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        if time.monotonic() - self._last >= self.interval:
            self._last = time.monotonic()
            self.close()

    def set_postfix(self, **values) -> None:
        self.postfix = " ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        """Print the current line (also the last one, when training ends)."""
        print(f"training: step {self.done}/{self.total} {self.postfix}", file=self.stream, flush=True)


def progress(total: int, initial: int, enabled: bool):
    """A tqdm bar on a terminal, plain lines every few seconds otherwise, or nothing."""
    if not enabled:
        return tqdm(total=total, initial=initial, disable=True)
    if sys.stderr.isatty():
        return tqdm(total=total, initial=initial, desc="training", unit="step", leave=False)
    return _LineProgress(total, initial)
