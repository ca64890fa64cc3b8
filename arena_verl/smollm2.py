"""``python -m arena_verl.smollm2``.
Kept so that the documented path works; the module is :mod:`arena_verl.testing.smollm2`."""

import sys

import arena_verl.testing.smollm2 as _module

if __name__ == "__main__":
    sys.exit(_module.main())
sys.modules[__name__] = _module
