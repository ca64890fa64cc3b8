"""``python -m arena_verl.tools.audit``: the ``arena-verl audit-judge`` command."""

import sys

from arena_verl.tools.audit.command import main

sys.exit(main())
