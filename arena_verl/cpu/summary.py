"""``arena_verl.cpu.summary``.
Kept so that the documented path works; the module is :mod:`arena_verl.data.metrics_log`."""

import sys

import arena_verl.data.metrics_log as _module

sys.modules[__name__] = _module
