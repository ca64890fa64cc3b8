"""``python -m arena_verl.tools.score``: the ``arena-verl score`` command."""

import sys

from arena_verl.tools.score.cli import main

sys.exit(main())
