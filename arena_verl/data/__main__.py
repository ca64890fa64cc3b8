"""``python -m arena_verl.data``: the data commands (:mod:`arena_verl.data.convert`)."""

import sys

from arena_verl.data.convert import main

sys.exit(main())
