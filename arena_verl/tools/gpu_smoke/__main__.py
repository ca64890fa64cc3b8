"""``python -m arena_verl.tools.gpu_smoke``: the subcommands are in :mod:`.cli`."""

import sys

from arena_verl.tools.gpu_smoke.cli import main

if __name__ == "__main__":
    sys.exit(main())
