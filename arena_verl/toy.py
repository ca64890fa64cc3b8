"""``python -m arena_verl.toy``.
Kept so that the documented path works; the module is :mod:`arena_verl.testing.toy`."""

import sys

import arena_verl.testing.toy as _module

if __name__ == "__main__":
    sys.exit(_module.main())
sys.modules[__name__] = _module
