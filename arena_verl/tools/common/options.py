"""The flags that ``arena-verl analyze``, ``arena-verl score`` and the evaluation share: one help text and one default
each (from :class:`~arena_verl.settings.ArenaSettings` where a setting exists), so a flag means the same everywhere."""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

from arena_verl.core.errors import InputError
from arena_verl.core.names import EXTRACTION_MODES
from arena_verl.evaluation.scoring import ScoringOptions
from arena_verl.settings import ArenaSettings

__all__ = [
    "add_answer_extraction",
    "add_data",
    "add_sandbox_url",
    "add_verification",
    "add_workers",
    "check_sandbox_url",
    "check_verification",
    "check_workers",
    "scoring_options",
]


def add_answer_extraction(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--answer-extraction",
        choices=EXTRACTION_MODES,
        default=ArenaSettings().answer_extraction,
        help="the math verifier's answer extraction (reward.arena.answer_extraction)",
    )


def add_sandbox_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sandbox-url", metavar="URL", help="sandbox_fusion run_code URL; without it code is not verified"
    )


def add_workers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers",
        type=int,
        default=ScoringOptions().workers,
        help="verifier processes/threads (default: up to 4, one per CPU)",
    )


def add_data(parser: argparse.ArgumentParser, required_for: str = "") -> None:
    parser.add_argument(
        "--data",
        nargs="+",
        default=[],
        metavar="PARQUET",
        help="the run's parquet file(s) (training or validation, as the dump): each prompt's data source and scorer, "
        "and its ground truth where the dump has none" + (f"; {required_for}" if required_for else ""),
    )


def add_verification(parser: argparse.ArgumentParser) -> None:
    """``--sandbox-url``, ``--answer-extraction`` and ``--workers``: how the dump's samples are verified."""
    add_sandbox_url(parser)
    add_answer_extraction(parser)
    add_workers(parser)


def check_workers(args: argparse.Namespace) -> None:
    if args.workers < 1:
        raise InputError(f"--workers must be >= 1, got {args.workers}")


def check_sandbox_url(args: argparse.Namespace) -> None:
    """``--sandbox-url``, when given, is an http(s) URL with a host: a typo would otherwise surface as every code
    sample ``sandbox_unavailable``, after the whole dump was read."""
    url = args.sandbox_url
    if url is None:
        return
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a bad port or IPv6 literal
        valid = False
    if not valid or any(c.isspace() for c in url):
        raise InputError(f"--sandbox-url {url!r}: not an http(s) URL with a host, e.g. http://sandbox:8080/run_code")


def check_verification(args: argparse.Namespace) -> None:
    """The shared verification flags (``--workers``, ``--sandbox-url``), checked with a command's other options:
    before any output file is opened."""
    check_workers(args)
    check_sandbox_url(args)


def scoring_options(args: argparse.Namespace, **changes) -> ScoringOptions:
    """The scorer's options from the shared flags (``changes``: a command's own, e.g. ``use_dumped_scores``)."""
    check_verification(args)
    return ScoringOptions(
        sandbox_url=args.sandbox_url, answer_extraction=args.answer_extraction, workers=args.workers, **changes
    )
