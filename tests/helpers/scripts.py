"""Load a script under scripts/ as a module, for tests of its functions."""

import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(relative: str, name: str):
    """``scripts/<relative>`` as module ``name`` (registered in sys.modules: dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
