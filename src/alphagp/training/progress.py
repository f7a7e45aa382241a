"""Progress of a fit: a tqdm bar on a terminal, a plain line every few seconds in a file or pipe;
with ``enabled="auto"`` only once the work has run :data:`AUTO_DELAY` seconds (a fit long enough to
wonder about, issue 79)."""

from __future__ import annotations

import sys
import time

from tqdm.auto import tqdm

#: seconds before ``enabled="auto"`` progress shows
AUTO_DELAY = 10.0


class _LineProgress:
    """Progress for a file or pipe: one plain line every ``interval`` seconds (no carriage returns).

    A line that falls due is printed at the next call, so a step that ends an epoch is printed
    with that epoch's values (the trainer sets them just after the step), not the previous one's.
    """

    def __init__(self, total: int, initial: int, interval: float = 5.0, stream=None, desc: str = "training",
                 delay: float = 0.0):
        self.total, self.done, self.interval, self.desc = total, initial, interval, desc
        self.stream = stream or sys.stderr
        self.postfix = ""
        self._last = time.monotonic()
        self._quiet_until = self._last + delay                  # nothing printed before (``delay``)
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
        line = f"{self.desc}: step {self.done}/{self.total} {self.postfix}"
        if line != self._printed and self._last >= self._quiet_until:
            print(line, file=self.stream, flush=True)
            self._printed = line


def progress(total: int, initial: int, enabled: bool | str, desc: str = "training"):
    """A tqdm bar on a terminal, plain lines every few seconds otherwise, or nothing (``enabled``
    false); ``enabled="auto"``: either only after :data:`AUTO_DELAY` seconds. On standard error."""
    if not enabled:
        return tqdm(total=total, initial=initial, disable=True)
    delay = AUTO_DELAY if enabled == "auto" else 0.0
    if sys.stderr.isatty():
        return tqdm(total=total, initial=initial, desc=desc, unit="step", leave=False, delay=delay, file=sys.stderr)
    return _LineProgress(total, initial, desc=desc, delay=delay)
