"""Users' backends and strategies are found by importing their modules: the installed packages' entry points (a
failing one fails every read, never only the first) and the modules ``reward.arena.plugins`` names."""

from __future__ import annotations

import sys
import textwrap
from types import SimpleNamespace

import pytest

from arena_verl.backend_registry import BACKENDS
from arena_verl.core import plugin_loader
from arena_verl.core.plugin_loader import PluginError, load_plugins
from arena_verl.settings import arena_settings

PLUGIN = textwrap.dedent(
    """
    from arena_verl.backend_registry import JudgeBackend, register
    from arena_verl.backend_registry.builtin import SimulatedOptions
    from arena_verl.backend_registry.grammar import format_simulated, parse_simulated

    register(JudgeBackend("{name}", options=SimulatedOptions, factory="arena_verl.judge.simulated.trace_judge:"
                          "simulated_judge", spec_form="{name}", parse_spec=parse_simulated,
                          format_spec=format_simulated, prompts=False, simulated=True))
    """
)


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    def write(name: str, backend: str) -> str:
        (tmp_path / f"{name}.py").write_text(PLUGIN.format(name=backend))
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    yield write
    for name in [n for n in BACKENDS if n.startswith("plugin_")]:
        del BACKENDS[name]


def test_a_module_the_config_names_registers_its_backend_before_the_keys_are_read(plugin_module):
    module = plugin_module("my_arena_plugin", "plugin_named")
    settings = arena_settings(group_size=4, plugins=[module], judge={"backend": "plugin_named"})
    assert settings.judge.backend == "plugin_named" and settings.plugins == (module,)
    with pytest.raises(PluginError, match="cannot import plugin module 'no_such_plugin_module'"):
        arena_settings(group_size=4, plugins=["no_such_plugin_module"])
    with pytest.raises(PluginError, match="is not a module path"):
        arena_settings(group_size=4, plugins=["not a module"])


def test_a_failing_entry_point_fails_every_read_and_a_good_one_loads_once(plugin_module, monkeypatch):
    good = plugin_module("good_arena_plugin", "plugin_entry")
    entries = [SimpleNamespace(name="broken", value="no_such_module.sub:thing")]
    monkeypatch.setattr(plugin_loader.metadata, "entry_points", lambda group: list(entries))
    monkeypatch.setattr(plugin_loader, "_entry_points", "unread")
    for _ in range(2):  # not only the first read: a run must never go on without a configured plugin
        with pytest.raises(PluginError, match="entry point 'broken'"):
            load_plugins()
    entries[:] = [SimpleNamespace(name="good", value=f"{good}:anything")]
    load_plugins()
    assert "plugin_entry" in BACKENDS and good in sys.modules
    entries[:] = [SimpleNamespace(name="broken", value="no_such_module.sub:thing")]
    load_plugins()  # read once a process: entry points are not read again once they loaded
