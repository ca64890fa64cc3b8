"""The served judge's addresses as settings give them: one http(s) address, or several (replicas) comma-separated or
in a list. Pure string rules, shared by the settings check and the judge's endpoint."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["request_url", "check_url", "repeated_servers", "split_urls", "CHAT_COMPLETIONS"]

CHAT_COMPLETIONS = "/v1/chat/completions"  # an OpenAI-compatible server's chat path


def check_url(url: str, where: str) -> str:
    """``url`` without whitespace, when it is an http(s) address with a host and no user info; else a ValueError
    naming ``where`` (the setting or file it came from)."""
    url = "".join(str(url).split())
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = url[:200] or "an empty address"
        raise ValueError(f"{where} holds {shown!r}, not an http(s) address (http://host:port/v1)")
    if "@" in parts.netloc:  # http://judge-node:8000@elsewhere/v1 reads like the judge and goes elsewhere
        raise ValueError(f"{where}: an address with user info ({url[:200]!r}) is refused")
    return url


def request_url(base_url: str, path: str = CHAT_COMPLETIONS) -> str:
    """The URL a served judge's request goes to: ``path`` (a backend's ``request_path``, e.g. ``/v1/chat/completions``)
    under ``base_url``, where the base may already end with the path's leading segments (``http://h:8000/v1`` +
    ``/v1/chat/completions`` is ``http://h:8000/v1/chat/completions``, as is ``http://h:8000``'s). The one rule for
    every served judge's request, its readiness probe and its replica identity."""
    base = base_url.strip().rstrip("/")
    segments = [part for part in path.split("/") if part]
    for cut in range(len(segments) - 1, 0, -1):  # the longest leading part of the path the base already ends with
        if base.endswith("/" + "/".join(segments[:cut])):
            return base + "/" + "/".join(segments[cut:])
    return base + "/" + "/".join(segments)


def repeated_servers(urls: list[str], path: str = CHAT_COMPLETIONS) -> list[str]:
    """The addresses in ``urls`` that call a server an earlier one already calls (one request URL:
    ``http://h:8000``, ``http://h:8000/`` and ``http://h:8000/v1`` are one replica). The one rule for a replica listed
    twice; ``recipes/lib/experiment.sh``'s ``_check_urls`` applies it before anything starts."""
    seen, repeated = set(), []
    for url in urls:
        key = request_url(url, path)
        if key in seen:
            repeated.append(url)
        seen.add(key)
    return repeated


def split_urls(value) -> list[str]:
    """The addresses of ``reward.arena.judge.base_url``: a string (comma-separated for several), a list of them, or
    None (none)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    urls = []
    for item in items:
        urls.extend(part.strip() for part in str(item).split(",") if part.strip())
    return urls
