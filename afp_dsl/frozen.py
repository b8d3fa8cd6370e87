"""Immutable JSON values for the IR: maps become `FrozenMap`, lists become tuples.

Role:       lets literal data (fact maps, schemas, stub results) live inside the frozen IR;
            `plain` copies any JSON-like value to plain shapes; `host_data` turns what host code
            returned (any Python value) into JSON data, or names why it cannot (`strict`: a
            leaf with no JSON form is a problem, never its repr).
Invariants: `thaw(freeze(x)) == x` for any JSON value; FrozenMap keeps insertion order;
            `host_data` never raises and never returns data nested deeper than `MAX_DEPTH`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator


class FrozenMap(Mapping):
    """A hashable, read-only, insertion-ordered mapping (the stdlib has none)."""

    __slots__ = ("_d", "_h")

    def __init__(self, items: Any = ()):
        self._d = dict(items)
        self._h: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    # The Mapping mixins would go through __getitem__ and exceptions; schemas and facts are
    # read in every check and tool call, so these delegate straight to the dict.
    def __contains__(self, key: object) -> bool:
        return key in self._d

    def get(self, key: str, default: Any = None) -> Any:
        return self._d.get(key, default)

    def keys(self):  # noqa: ANN201 - a dict view, read-only
        return self._d.keys()

    def values(self):  # noqa: ANN201
        return self._d.values()

    def items(self):  # noqa: ANN201
        return self._d.items()

    def __hash__(self) -> int:
        if self._h is None:
            self._h = hash(tuple(self._d.items()))
        return self._h

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._d == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"


def adopt(d: dict) -> FrozenMap:
    """`FrozenMap(d)` for a fresh dict of frozen values that no one else holds or changes: the map
    takes the dict itself instead of a copy (Speed: schema blocks build one per field)."""
    m = _new_map(FrozenMap)
    m._d = d
    m._h = None
    return m


_new_map = object.__new__


def is_mapping(value: Any) -> bool:
    """`isinstance(value, Mapping)`, answered without the abstract-class machinery for the two
    mappings JSON data here comes as (FrozenMap, dict) and for scalars; checks ask it a lot."""
    t = type(value)
    if t is FrozenMap or t is dict:
        return True
    if t is str or t is int or t is float or t is bool or t is tuple or t is list or value is None:
        return False
    return isinstance(value, Mapping)


def a_named(name: str) -> str:
    """A type's name for messages, with its article: "an `int`", "a `set`"."""
    return f"an `{name}`" if name[:1].lower() in "aeiou" else f"a `{name}`"


def a_type(value: Any) -> str:
    """`value`'s type for messages, with its article: "an `object`", "a `bytes`"."""
    return a_named(type(value).__name__)


def freeze(value: Any) -> Any:
    """Deep-convert JSON-like data to hashable immutable data."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return value  # the common leaves, without the costly abstract-class checks below
    if isinstance(value, Mapping):
        return FrozenMap((k, freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """A deep copy as plain JSON shapes: any mapping → dict (string keys), lists and tuples →
    lists; scalars as they are. The one conversion every stage uses (`thaw` is its name for IR)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


thaw = plain


# ---------------------------------------------------------------- values from host code
MAX_DEPTH = 100
"""Lists and maps nested deeper than this are refused where they enter a run (a host tool's
result, a model's tool-call arguments): every later stage walks data recursively."""
_LONG_INT_BITS = 2000  # below any `sys.set_int_max_str_digits` limit (at least 640 digits)


class _NotData(Exception):
    pass


class _NoJSON(_NotData):
    """A leaf with no JSON form (strict walk); `path` collects where it is, innermost first."""

    def __init__(self, leaf: Any, *, key: bool = False):
        name = type(leaf).__name__
        if key:
            text = f"has {a_named(name)} as a map key, which JSON cannot write (use str keys)"
        else:
            hint = _HINTS.get(name, "its fields as a dict, or a str")
            text = f"is {a_named(name)}, which has no JSON form (return {hint} instead)"
        super().__init__(f"{text}; {JSON_LIKE}")
        self.child, self.path = leaf, []


JSON_LIKE = "return JSON-like data: dict, list, str, number, bool, None"
_HINTS = {"set": "a sorted list", "frozenset": "a sorted list", "bytes": "a decoded str",
          "bytearray": "a decoded str", "generator": "a list: `list(...)`",
          "range": "a list: `list(...)`"}
# Leaves a strict walk writes as their text, as before: the text is deterministic and means
# what the value means (a date, a decimal number, an id). Anything else has no JSON form.
_AS_TEXT = frozenset({("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"),
                      ("decimal", "Decimal"), ("uuid", "UUID")})


def host_data(value: Any, *, strict: bool = False) -> tuple[Any, str | None]:
    """`(data, None)`: `value` as plain JSON data (`plain`; mappings with str, number, bool or None
    keys → dicts with str keys, lists and tuples → lists, str and int subclasses as their plain
    value); or `(None, problem)` when it cannot be: a cycle, nesting deeper than `MAX_DEPTH`, an
    integer too long to write, an iteration or a `str()` that raises, two keys of one map
    written as the same text (`1` and `"1"`: one value would be lost). Any other leaf is written
    as its `str`, as the model would read it; with `strict`, only dates, times, decimals and UUIDs
    are, and any other (a set, an object, a generator, bytes) is a problem naming its type, its
    place and the fix (a repr would differ from run to run).

    Example:
        >>> host_data({"a": (1, b"x")})
        ({'a': [1, "b'x'"]}, None)
        >>> loop = []; loop.append(loop); host_data(loop)[1]
        'it contains itself (a cycle)'
        >>> host_data({"tags": [{"x"}]}, strict=True)[1].split(",")[0]
        '`tags[0]` is a `set`'
    """
    leaf, key = (_json_leaf, _json_key) if strict else (_text, _key)
    try:
        return _data(value, 0, set(), leaf, key), None
    except _NoJSON as exc:
        where = "".join(reversed(exc.path)).removeprefix(".")
        return None, f"`{where}` {exc}" if where else f"it {exc}"
    except _NotData as exc:
        return None, str(exc)


def _data(value: Any, depth: int, path: set[int], leaf: Any, key: Any) -> Any:
    t = type(value)
    if t is str or t is bool or t is float or value is None:
        return value
    if isinstance(value, int):  # (and subclasses below: the plain value, whatever they override)
        return _int(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if not isinstance(value, (Mapping, list, tuple)):
        return leaf(value)
    if depth >= MAX_DEPTH:
        raise _NotData(f"it is nested more than {MAX_DEPTH} levels deep")
    if id(value) in path:
        raise _NotData("it contains itself (a cycle)")
    path.add(id(value))
    try:
        if isinstance(value, Mapping):
            items = list(value.items())
            out = {key(k): _data(v, depth + 1, path, leaf, key) for k, v in items}
            if len(out) != len(items):  # two keys written as one text: one value would be lost
                raise _NotData(_same_key(items, key))
            return out
        return [_data(v, depth + 1, path, leaf, key) for v in value]
    except _NoJSON as exc:  # (rare: find where, for the message)
        exc.path.append(_step(value, exc.child, key))
        exc.child = value
        raise
    except _NotData:
        raise
    except (Exception, SystemExit) as exc:  # a mapping or sequence whose iteration raises
        raise _NotData(f"reading {a_type(value)} in it raised {type(exc).__name__}") from None
    finally:
        path.discard(id(value))


def _same_key(items: list, key: Any) -> str:
    seen: dict[str, Any] = {}
    for k, _ in items:
        text = key(k)
        if text in seen:
            a, b = type(seen[text]).__name__, type(k).__name__
            return (f"it has two map keys written as the same text `{text[:40]}` (keys of type "
                    f"`{a}` and `{b}`), so one value would be lost; give every key its own text")
        seen[text] = k
    return "it has two map keys written as the same text"


def _key(key: Any) -> str:
    return key if type(key) is str else _text(key)


def _json_leaf(value: Any) -> str:
    if (type(value).__module__, type(value).__name__) in _AS_TEXT:
        return _text(value)
    raise _NoJSON(value)


def _json_key(key: Any) -> str:
    if type(key) is str:
        return key
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, bool):
        return str(key)
    if isinstance(key, (int, float)):  # (as `str()` writes them: "1", "1.5")
        return str(_int(key) if isinstance(key, int) else float.__float__(key))
    raise _NoJSON(key, key=True)


def _step(container: Any, child: Any, key: Any) -> str:
    """How `container` holds `child` (`.key` or `[i]`); '' when it holds it as a key."""
    try:
        items = container.items() if isinstance(container, Mapping) else enumerate(container)
        for k, v in items:
            if v is child:
                return f".{key(k)}" if isinstance(container, Mapping) else f"[{k}]"
    except (Exception, SystemExit):  # noqa: BLE001 - (it was read once already)
        pass
    return ""


def _int(value: int) -> int:
    n = int.__int__(value)
    if n.bit_length() > _LONG_INT_BITS:
        try:
            str(n)
        except ValueError:
            raise _NotData("it holds an integer too long to write in decimal") from None
    return n


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception as exc:
        raise _NotData(f"it holds {a_type(value)} whose str() raised "
                       f"{type(exc).__name__}") from None
