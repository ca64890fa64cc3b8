"""Settings parts: frozen dataclasses whose fields say, once, what they accept (:func:`setting`: a default, one line of
help, a range or a set of choices) and check themselves on construction (:class:`Part`). One reader
(:func:`read_part`) builds a part, and the parts it holds, from a plain mapping of user keys (``reward.arena.*``);
the docs (``arena-verl config-docs``) are written from the same metadata. Stdlib only: the core declares its parts
here, and the settings read them without importing what they configure.

A part's fields are of four kinds (their metadata's ``kind``):

- a *key* (:func:`setting`): one user key, checked against its metadata;
- a *flat* part (:func:`flat_part`): another part whose keys sit beside this part's own (``reward.arena.l2`` is the
  tournament's);
- a *nested* part (:func:`nested_part`): another part under a key of its own (``reward.arena.judge.*``);
- a *chosen* part (:func:`chosen_part`): the part of one registry entry picked by a key of this part (the judge
  backend's own options), its keys beside this part's; the keys of every other entry are checked and accepted (but
  refused away from their defaults for an ``EXCLUSIVE`` part);
- a *registered* part (:func:`registered_parts`): a mapping, one part for each entry of a registry that declares one
  (each strategy's own knobs), every one read.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any, ClassVar

__all__ = [
    "Part",
    "SettingError",
    "setting",
    "flat_part",
    "nested_part",
    "chosen_part",
    "registered_parts",
    "read_part",
    "part_keys",
    "key_fields",
    "range_text",
    "DAY_S",
]

DAY_S = 86_400.0  # the longest timeout or deadline a key accepts


class SettingError(ValueError):
    """A value a key does not accept; the message names the full key."""


def setting(
    default: Any = MISSING,
    *,
    help: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    choices: tuple | Callable[[], tuple] | None = None,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A user key: its default, one line of help (the docs' table), and what it accepts: numbers in
    ``[low, high]`` (``(low, high]`` with ``low_open``; either bound may be None), or one of ``choices`` (a tuple, or
    a function that returns the names registered now). ``None`` passes the checks of an optional key."""
    metadata = {"kind": "key", "help": help, "low": low, "high": high, "low_open": low_open, "choices": choices}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flat_part(cls: type) -> Any:
    """A part whose keys sit beside the holder's own."""
    return dataclasses.field(default_factory=cls, metadata={"kind": "flat", "cls": cls})


def nested_part(cls: type) -> Any:
    """A part under a key of its own (the field's name)."""
    return dataclasses.field(default_factory=cls, metadata={"kind": "nested", "cls": cls})


def chosen_part(by: str, types: Callable[[], Mapping[str, type]]) -> Any:
    """The part of the registry entry that the holder's key ``by`` names (``types()``: each entry's part type), keys
    beside the holder's; None until the holder fills in the entry's defaults."""
    return dataclasses.field(default=None, metadata={"kind": "chosen", "by": by, "types": types})


def registered_parts(types: Callable[[], Mapping[str, type]]) -> Any:
    """A mapping of every registry entry's part (``types()``: each entry's part type), keys beside the holder's."""
    return dataclasses.field(
        default_factory=lambda: {name: cls() for name, cls in types().items()},
        metadata={"kind": "registered", "types": types},
    )


@dataclass(frozen=True)
class Part:
    """A settings part: its keys are checked when it is built (:meth:`check`, then the part's own rules in
    :meth:`rules`). ``PREFIX`` is where its keys sit (``reward.arena``), for the messages."""

    PREFIX: ClassVar[str] = "reward.arena"
    # A chosen part's keys set away from their defaults while another entry is chosen: refused (True) or accepted
    # unread (False: a shared config may set a backend's keys that another backend ignores).
    EXCLUSIVE: ClassVar[bool] = False

    def __post_init__(self):
        self.check()
        self.rules()

    def check(self) -> None:
        hints = _hints(type(self))
        for f in key_fields(type(self)):
            key, value = f"{self.PREFIX}.{f.name}", getattr(self, f.name)
            _check_type(key, value, hints[f.name])  # a part built in Python gets no reader's coercion
            _check_value(key, value, f.metadata)

    def rules(self) -> None:
        """Rules between this part's own keys (a part overrides it)."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check_type(key: str, value: Any, hint: Any) -> None:
    """``value`` is of the key's declared type (None for an optional key); else a SettingError naming it."""
    args = typing.get_args(hint)
    if value is None and type(None) in args:
        return
    kind = next((a for a in args if a is not type(None)), hint) if type(None) in args else hint
    origin = typing.get_origin(kind)
    if origin is tuple:
        ok = isinstance(value, tuple) and all(isinstance(v, _item_type(kind)) for v in value)
    elif origin is dict or kind is dict:
        ok = isinstance(value, Mapping)
    elif kind in (bool, int, float, str):
        ok = _of_scalar_type(value, kind, exact=True)
    else:
        ok = True
    if not ok:
        name = getattr(kind, "__name__", str(kind))
        raise SettingError(f"{key} must be of type {name}, got {value!r}")


def _item_type(hint: Any) -> type:
    """What a list key's items are: ``Mapping`` (``tuple[dict[str, Any], ...]``) or ``str``."""
    item = typing.get_args(hint)[0]
    return Mapping if item is dict or typing.get_origin(item) is dict else str


def _of_scalar_type(value: Any, kind: type, exact: bool) -> bool:
    """Whether ``value`` is a ``kind``: a bool is no number; an integral float is an int when read (not ``exact``)."""
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        integral_float = not exact and isinstance(value, float) and value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool) or integral_float
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def key_fields(cls: type) -> list[dataclasses.Field]:
    """``cls``'s own keys (not its parts')."""
    return [f for f in dataclasses.fields(cls) if f.metadata.get("kind") == "key"]


def part_keys(cls: type) -> list[dataclasses.Field]:
    """Every key a reader takes for ``cls`` at its own level: its keys, and its flat parts' keys (chosen and
    registered parts excluded: their types depend on the registries)."""
    out = []
    for f in dataclasses.fields(cls):
        kind = f.metadata.get("kind")
        if kind == "key":
            out.append(f)
        elif kind == "flat":
            out.extend(part_keys(f.metadata["cls"]))
    return out


def range_text(metadata: Mapping) -> str:
    """What a key accepts, as the docs and the messages write it ("" when anything of its type)."""
    choices = metadata.get("choices")
    if choices is not None:
        names = choices() if callable(choices) else choices
        return "one of " + ", ".join(map(str, names))
    low, high = metadata.get("low"), metadata.get("high")
    if low is None and high is None:
        return ""
    if high is None:
        return f"{'>' if metadata.get('low_open') else '>='} {low:g}"
    if low is None:
        return f"<= {high:g}"
    return f"in {'(' if metadata.get('low_open') else '['}{low:g}, {high:g}]"


def _check_value(key: str, value: Any, metadata: Mapping) -> None:
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise SettingError(f"{key} must be a finite number, got {value!r}")
    choices = metadata.get("choices")
    if choices is not None:
        names = tuple(choices() if callable(choices) else choices)
        if value not in names:
            raise SettingError(f"{key} must be one of {names}, got {value!r}")
        return
    low, high = metadata.get("low"), metadata.get("high")
    if low is None and high is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    above = value > low if metadata.get("low_open") else value >= low if low is not None else True
    if not (above and (high is None or value <= high)):
        raise SettingError(f"{key} must be {range_text(metadata)}, got {value!r}")


# --- the reader ---


def read_part(cls: type, raw: Mapping[str, Any], prefix: str, **fixed: Any) -> Any:
    """``cls`` built from the user keys ``raw`` (a plain mapping), its parts read the same way; ``fixed`` are field
    values given by the caller. An unknown key, a value of the wrong type or out of its range is a ``SettingError``
    naming the full key (``prefix`` and the key)."""
    if not isinstance(raw, Mapping):
        raise SettingError(f"{prefix} must be a mapping, got {raw!r}")
    twice = sorted(name for name, count in Counter(_level_names(cls)).items() if count > 1)
    if twice:  # a registered part (a user's strategy, a backend) declares a key another part has
        raise SettingError(f"{prefix}.{twice[0]} is declared by two parts of {cls.__name__}: rename one of them")
    taken: set[str] = set()
    part = _read(cls, raw, prefix, taken, fixed)
    unknown = sorted(set(raw) - taken - set(fixed))
    if unknown:
        known = sorted(taken | set(_level_names(cls)))
        raise SettingError(f"{prefix}.{unknown[0]} is not a known key; known keys: {known}")
    return part


def _read(cls: type, raw: Mapping, prefix: str, taken: set[str], fixed: Mapping | None = None) -> Any:
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = dict(fixed or {})
    for f in dataclasses.fields(cls):
        if f.name in values:
            taken.add(f.name)
            continue
        kind = f.metadata.get("kind")
        if kind == "key":
            if f.name in raw:
                taken.add(f.name)
                value = _coerce(f"{prefix}.{f.name}", raw[f.name], hints[f.name])
                if value is not _DEFAULT:
                    values[f.name] = value
        elif kind == "flat":
            values[f.name] = _read(f.metadata["cls"], raw, prefix, taken)
        elif kind == "nested":
            taken.add(f.name)
            inner = raw.get(f.name)
            inner = {} if inner is None else inner
            values[f.name] = read_part(f.metadata["cls"], inner, f"{prefix}.{f.name}")
        elif kind == "registered":
            values[f.name] = {name: _read(t, raw, prefix, taken) for name, t in f.metadata["types"]().items()}
    for f in dataclasses.fields(cls):
        if f.metadata.get("kind") == "chosen" and f.name not in values:
            values[f.name] = _read_chosen(cls, f, raw, prefix, taken, values)
    try:
        return cls(**values)
    except TypeError as exc:  # a part's own rule met a value of another type than it declares
        raise SettingError(f"{prefix}: {exc}") from None


def _holder_default(holder: type, name: str) -> Any:
    field = holder.__dataclass_fields__[name]
    return field.default_factory() if field.default is MISSING else field.default


def _read_chosen(
    holder: type, f: dataclasses.Field, raw: Mapping, prefix: str, taken: set[str], values: Mapping
) -> Any:
    """The chosen entry's part; every other entry's keys are checked as that entry's type checks them, and accepted
    (a shared config may set them) unless that type is ``EXCLUSIVE`` and the value is not its default: refused, naming
    the entry they belong to."""
    by = f.metadata["by"]
    name = values.get(by, _holder_default(holder, by))
    types = f.metadata["types"]()
    if name not in types:
        raise SettingError(f"{prefix}.{by} must be one of {tuple(types)}, got {name!r}")
    chosen = _read(types[name], raw, prefix, taken)
    own = {g.name for g in part_keys(types[name])}
    for other, cls in types.items():
        if other == name:
            continue
        hints = typing.get_type_hints(cls)
        for g in part_keys(cls):
            if g.name in own or g.name not in raw:
                continue
            taken.add(g.name)
            value = _coerce(f"{prefix}.{g.name}", raw[g.name], hints[g.name])
            default = g.default_factory() if g.default is MISSING else g.default
            if value is not _DEFAULT:
                _check_value(f"{cls.PREFIX}.{g.name}", value, g.metadata)
            if cls.EXCLUSIVE and value is not _DEFAULT and value != default:
                raise SettingError(
                    f"{prefix}.{g.name} applies to the {other} {by} ({prefix}.{by} is {name!r}): set {prefix}.{by}="
                    f"{other}, or leave {g.name} at its default"
                )
    return chosen


def _level_names(cls: type) -> list[str]:
    """The key names each part at ``cls``'s level declares (a chosen part's entries may share names: one is read)."""
    names: list[str] = []
    for f in dataclasses.fields(cls):
        kind = f.metadata.get("kind")
        if kind in ("key", "nested"):
            names.append(f.name)
        elif kind == "flat":
            names += _level_names(f.metadata["cls"])
        elif kind == "registered":
            names += [name for t in f.metadata["types"]().values() for name in _level_names(t)]
        elif kind == "chosen":
            names += sorted({name for t in f.metadata["types"]().values() for name in _level_names(t)})
    return names


_DEFAULT = object()


def _coerce(key: str, value: Any, hint: Any) -> Any:
    """``value`` as the field's annotated type; null is None for an optional key and its default otherwise."""
    args = typing.get_args(hint)
    optional = type(None) in args
    if value is None:
        return None if optional else _DEFAULT
    kind = next(a for a in args if a is not type(None)) if optional else hint
    origin = typing.get_origin(kind)
    if origin is tuple:  # tuple[str, ...] or tuple[dict[str, Any], ...]
        item = _item_type(kind)
        if isinstance(value, (list, tuple)) and all(isinstance(v, item) for v in value):
            return tuple(dict(v) if item is Mapping else v for v in value)
        raise SettingError(f"{key} must be a list of {'mappings' if item is Mapping else 'strings'}, got {value!r}")
    if origin is dict or kind is dict:
        if isinstance(value, Mapping):
            return dict(value)
        raise SettingError(f"{key} must be a mapping, got {value!r}")
    ok = _of_scalar_type(value, kind, exact=False) if kind in (bool, int, float, str) else True
    if not ok:
        raise SettingError(f"{key} must be of type {kind.__name__}, got {value!r}")
    try:
        return kind(value) if kind in (int, float) else value
    except OverflowError:  # an integer of hundreds of digits as a float
        raise SettingError(f"{key} is out of range, got {str(value)[:40]}...") from None
