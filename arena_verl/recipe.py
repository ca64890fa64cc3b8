"""``python -m arena_verl.recipe``.
Kept so that the documented path works; the module is :mod:`arena_verl.tools.recipe`."""

import sys

import arena_verl.tools.recipe as _module

if __name__ == "__main__":
    sys.exit(_module.main())
sys.modules[__name__] = _module
