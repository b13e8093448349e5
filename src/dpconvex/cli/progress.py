"""Elapsed-time status line of a long fit (on a terminal only)."""

from __future__ import annotations

import sys
import time

PROGRESS_DELAY = 2.0


class _Clock:
    """A status line on ``stream`` after ``delay`` seconds, refreshed each second."""

    def __init__(self, label: str, stream, delay: float, enabled: bool):
        import threading

        self.label, self.stream, self.delay, self.enabled = label, stream, delay, enabled
        self.seconds = 0.0
        self.shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            elapsed = time.perf_counter() - self._start
            self.stream.write(f"\r{self.label}: {elapsed:.0f} s elapsed")
            self.stream.flush()
            self.shown = True
            if self._stop.wait(1.0):
                return

    def __enter__(self):
        self._start = time.perf_counter()
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._start
        if self.enabled:
            self._stop.set()
            self._thread.join()
            if self.shown:  # clear the status line
                self.stream.write("\r" + " " * (len(self.label) + 24) + "\r")
                self.stream.flush()


def _progress(label: str, *, enabled: bool, stream=None, delay: float | None = None) -> _Clock:
    """Time a fit; on a terminal, show the elapsed time once it passes ``PROGRESS_DELAY``.

    Only elapsed time is shown (public settings and the clock; no count that depends on
    the data); never with --json, and not when stderr is not a terminal (logs, pipes).
    """
    stream = sys.stderr if stream is None else stream
    enabled = enabled and _is_terminal(stream)
    return _Clock(label, stream, PROGRESS_DELAY if delay is None else delay, enabled)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
