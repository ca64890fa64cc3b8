"""Evaluate validation generations per benchmark: avg@n and unbiased pass@k (the paper's tables).

The command lives in :mod:`arena_verl.tools.evaluate` (also ``arena-verl evaluate``); this script is its documented
entry point, with the same flags, output and exit status. See scripts/eval/README.md.
"""

from __future__ import annotations

import sys

from arena_verl.tools.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
