"""Where a served judge answers: its base URLs (one, or several replicas), and optionally the URL file a judge job
publishes its addresses in.

Under Slurm the judge server is a job of its own (scripts/slurm/judge_serve.sbatch); when it is requeued or
restarted it comes back on another node or port and writes its new address into the same file. A judge that only
knew the address from the start of training would fail every call from then on. With ``base_url_file`` the judge
reads the file again after a failed request (at most once per ``min_interval_s``), so the next attempt goes to the
new address. The file holds one address a line (several: replicas); a new list replaces the whole old one.

With several replicas every call of a group goes to the same one (its prefix cache holds the group's prompts), by
rendezvous hashing over the addresses (:class:`~arena_verl.core.rendezvous.ReplicaRing`): a replica that fails leaves
the ring for a while and its groups go to their next choice; no other group moves.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from pathlib import Path

from arena_verl.core.rendezvous import ReplicaRing
from arena_verl.core.urls import CHAT_COMPLETIONS, check_url, repeated_servers, request_url, split_urls

logger = logging.getLogger(__name__)

__all__ = ["Endpoint", "request_url", "check_url", "read_url_file", "split_urls"]


def read_url_file(path: str | Path) -> list[str]:
    """The addresses in a URL file: one a line (several: judge replicas), whitespace removed; blank lines and
    ``#`` comments skipped.

    Raises
    ------
    ValueError
        The file cannot be read, holds no address, lists one twice, or a line is not an http(s) address with a host.
    """
    where = f"judge URL file {str(path)!r}"
    try:
        # A FIFO or a device would block the referee's event loop on open: only a regular file is read.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError(f"{where} is not a regular file")
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(_MAX_FILE_BYTES)
    except OSError as exc:
        raise ValueError(f"{where} cannot be read: {exc.strerror or exc}") from exc
    urls = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            urls.append(check_url(line, f"{where} line {number}"))
    if not urls:
        raise ValueError(f"{where} holds no address (an empty file: one http(s) address a line)")
    if repeated := repeated_servers(urls):
        raise ValueError(f"{where} lists a replica twice: {repeated} (one server, one line)")
    return urls


_MAX_FILE_BYTES = 64 * 1024


class Endpoint:
    """The current addresses of a served judge (one or several replicas), and which replica serves a group.

    Parameters
    ----------
    base_url : str, sequence of str, or None
        The addresses known at start (a comma-separated string or a list). None: the URL file's.
    url_file : str or None
        A file of addresses, one a line, re-read by :meth:`refresh`.
    min_interval_s : float
        Reads of the file are at least this far apart (every failed call asks for one; a shared file system should not
        see one per call).
    first_down_s, max_down_s : float
        How long a replica that failed stays out of the ring (doubled per further failure, up to the most).
    """

    def __init__(
        self,
        base_url,
        url_file: str | None = None,
        min_interval_s: float = 1.0,
        first_down_s: float = 5.0,
        max_down_s: float = 60.0,
        request_path: str = CHAT_COMPLETIONS,
    ):
        self.url_file = url_file
        self.request_path = request_path  # the backend's (its registry entry's): each replica's request URL
        self.min_interval_s = min_interval_s
        base_urls = split_urls(base_url)
        if url_file and not base_urls:
            base_urls = read_url_file(url_file)  # at start a broken file is an error, not a fallback
        if not base_urls:
            raise ValueError("a served judge needs reward.arena.judge.base_url or reward.arena.judge.base_url_file")
        self.ring = ReplicaRing([request_url(u, request_path) for u in base_urls], first_down_s, max_down_s)
        self.base_urls = [u.strip() for u in base_urls]
        self.changes = 0  # address lists adopted from the file after the start
        self.rerouted = 0  # calls sent past their group's replica because it was out of the ring
        self._last_read = float("-inf")

    @property
    def urls(self) -> list[str]:
        """The chat-completions URL of every replica."""
        return list(self.ring.names)

    @property
    def url(self) -> str:
        """The first replica's chat-completions URL (the only one with a single address)."""
        return self.ring.names[0]

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    def pick(self, group: str | None) -> str:
        """The chat-completions URL for a call of ``group``: the group's replica in the ring (None: the first
        replica in the ring). A call sent past its group's first choice is counted in ``rerouted``."""
        index, rerouted = self.ring.route(group)
        self.rerouted += rerouted
        return self.ring.names[index]

    def failed(self, url: str) -> None:
        """A request to ``url`` failed (refused, reset, timed out, a server error): out of the ring for a while."""
        if self.ring.failed(url) and len(self.ring.names) > 1:
            logger.warning("judge replica %s failed: its groups go to the other replicas for now (%d of %d out)", url,
                           len(self.ring.down()), len(self.ring.names))  # fmt: skip

    def answered(self, url: str) -> None:
        if self.ring.answered(url) and len(self.ring.names) > 1:
            logger.warning("judge replica %s answers again: its groups come back to it", url)

    def refresh(self) -> bool:
        """Read the URL file again (when there is one and the last read is old enough); True when the list changed
        (it replaces the whole old one). A file that is missing or broken for now keeps the addresses in use (the
        judge job may be rewriting it)."""
        if not self.url_file:
            return False
        now = time.monotonic()
        if now - self._last_read < self.min_interval_s:
            return False
        self._last_read = now
        try:
            base_urls = read_url_file(self.url_file)
        except ValueError as exc:
            logger.debug("judge addresses kept (%s)", exc)
            return False
        if base_urls == self.base_urls:
            return False
        logger.warning("judge: the URL file %s now says %s (was %s): calls go there", self.url_file,
                       ", ".join(base_urls), ", ".join(self.base_urls))  # fmt: skip
        self.base_urls = base_urls
        self.ring.replace([request_url(u, self.request_path) for u in base_urls])
        self.changes += 1
        return True
