"""The commands' one error path (defined in :mod:`arena_verl.core.errors`, so that every layer's command line shares
it): bad input is one ``error:`` line on stderr and exit status 2; an output file is written whole or not at all."""

from arena_verl.core.errors import InputError, guarded, write_output

__all__ = ["InputError", "guarded", "write_output"]
