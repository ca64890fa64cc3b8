"""Where a served judge answers: its base URL, and optionally the URL file a judge job publishes its address in.

Under Slurm the judge server is a job of its own (scripts/slurm/judge_serve.sbatch); when it is requeued or
restarted it comes back on another node or port and writes its new address into the same file. A judge that only
knew the address from the start of training would fail every call from then on. With ``base_url_file`` the judge
reads the file again after a failed request (at most once per ``min_interval_s``), so the next attempt goes to the
new address.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from pathlib import Path
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

__all__ = ["Endpoint", "chat_url", "read_url_file"]


def chat_url(base_url: str) -> str:
    """The chat-completions URL of an OpenAI-compatible server whose base (``http://host:port`` or ``.../v1``)."""
    base = base_url.strip().rstrip("/")
    return base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")


def read_url_file(path: str | Path) -> str:
    """The address in a URL file: its first line, whitespace removed.

    Raises
    ------
    ValueError
        The file cannot be read, is empty, or its first line is not an http(s) address with a host.
    """
    try:
        # A FIFO or a device would block the referee's event loop on open: only a regular file is read.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError(f"judge URL file {str(path)!r} is not a regular file")
        with open(path, encoding="utf-8", errors="replace") as handle:
            line = handle.readline(4096)
    except OSError as exc:
        raise ValueError(f"judge URL file {str(path)!r} cannot be read: {exc.strerror or exc}") from exc
    url = "".join(line.split())
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = url[:200] or "an empty first line"
        raise ValueError(f"judge URL file {str(path)!r} holds {shown!r}, not an http(s) address (http://host:port/v1)")
    if "@" in parts.netloc:  # http://judge-node:8000@elsewhere/v1 reads like the judge and goes elsewhere
        raise ValueError(f"judge URL file {str(path)!r}: an address with user info ({url[:200]!r}) is refused")
    return url


class Endpoint:
    """The current address of a served judge.

    Parameters
    ----------
    base_url : str or None
        The address known at start. None: the URL file's.
    url_file : str or None
        A file whose first line is the address, re-read by :meth:`refresh`.
    min_interval_s : float
        Reads of the file are at least this far apart (every failed call asks for one; a shared file system should not
        see one per call).
    """

    def __init__(self, base_url: str | None, url_file: str | None = None, min_interval_s: float = 1.0):
        self.url_file = url_file
        self.min_interval_s = min_interval_s
        if url_file and not base_url:
            base_url = read_url_file(url_file)  # at start a broken file is an error, not a fallback
        if not base_url:
            raise ValueError("a served judge needs reward.arena.judge.base_url or reward.arena.judge.base_url_file")
        self.base_url = base_url.strip()
        self.url = chat_url(self.base_url)
        self.changes = 0  # addresses adopted from the file after the start
        self._last_read = float("-inf")

    def refresh(self) -> bool:
        """Read the URL file again (when there is one and the last read is old enough); True when the address changed.
        A file that is missing or broken for now keeps the address in use (the judge job may be rewriting it)."""
        if not self.url_file:
            return False
        now = time.monotonic()
        if now - self._last_read < self.min_interval_s:
            return False
        self._last_read = now
        try:
            base_url = read_url_file(self.url_file)
        except ValueError as exc:
            logger.debug("judge address kept (%s)", exc)
            return False
        if base_url == self.base_url:
            return False
        logger.warning("judge: the URL file %s now says %s (was %s): calls go there", self.url_file, base_url,
                       self.base_url)  # fmt: skip
        self.base_url, self.url = base_url, chat_url(base_url)
        self.changes += 1
        return True
