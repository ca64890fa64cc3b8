"""The one error type for bad input to the tools (a dump, a data file, a flag): the ``arena-verl`` command prints its
message as one line on stderr and exits 2, never a traceback. Subclass it where a layer needs its own type."""

__all__ = ["InputError", "EXIT_OK", "EXIT_FAILED", "EXIT_BAD_INPUT"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class InputError(ValueError):
    """Input that cannot be used as given; the message names the file, row, key or flag, and what to do."""
