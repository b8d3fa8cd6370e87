"""Tool-argument validation: the plain fast check, and messages `path: what was expected` (§7.3).

Role:       `plainly_valid` answers "valid" for schemas in `schema_quick`'s subset without
            jsonschema; everything else goes to `arg_problems`, which turns JSON Schema 2020-12
            errors (from a cached validator) into the teaching message the model reads when a
            call is not executed; `misspelt_fields` gives the checker's "did you mean" for
            fields of data checked against a schema (AFP302, AFP405).
Invariants: `plainly_valid` says "valid" only when JSON Schema would; at most 10 problems;
            argument values are never echoed (field names may be); NaN and infinities are
            refused anywhere in the arguments (`non_finite`); a schema whose `$ref` does not
            resolve is a problem, never a crash.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .regex_quiet import quiet
from .schema_quick import checker

MAX_PROBLEMS = 10


def invalid_text(tool: str, problems: list[str]) -> str:
    lines = "\n".join(f"- {p}" for p in problems)
    return (f"Invalid arguments for tool `{tool}` — the call was not executed.\n{lines}\n"
            f"Fix the arguments to match the tool's input schema and call it again.")


def arg_problems(validator, args: Any) -> list[str]:
    """Up to 10 problems as `path: what was expected`; never the values themselves. A schema
    whose `$ref` does not resolve (the checker reports it as AFP301) is one problem, not a crash."""
    from referencing.exceptions import Unresolvable  # (loaded with jsonschema, which built `validator`)
    try:
        with quiet():
            schema = validator.schema
            errors = sorted(validator.iter_errors(args), key=lambda e: (
                _order(e.absolute_path, schema), e.validator or ""))  # (None: a `false` schema,
        # which used to end the run when it sorted beside a named keyword)
    except Unresolvable as exc:
        return [f"arguments: cannot be checked: the tool's input schema has a `$ref` that does not "
                f"resolve{_ref_of(exc)}; the tool's declaration must be fixed, not the arguments"]
    out: dict[str, None] = {}  # (one `required` error per missing field, each naming them all)
    for e in errors:
        out.update(dict.fromkeys(describe_error(e, validator.schema, args)))
        if len(out) >= MAX_PROBLEMS:
            break
    return list(out)[:MAX_PROBLEMS]


def _order(path, schema: Any = None) -> list[tuple[int, int, str]]:
    """A sort key for a path: item indices as numbers (`l[2]` before `l[10]`), fields in the
    order the schema declares them (`properties`; as the model was shown them), others by name."""
    key: list[tuple[int, int, str]] = []
    for p in path:
        if isinstance(p, int):
            key.append((0, p, ""))
            schema = _item_schema(schema, p)
            continue
        props = schema.get("properties") if isinstance(schema, dict) else None
        names = list(props) if isinstance(props, dict) else []
        key.append((1, names.index(p), "") if p in names else (2, 0, str(p)))
        schema = props.get(p) if p in names else None
    return key


def _item_schema(schema: Any, index: int) -> Any:
    if not isinstance(schema, dict):
        return None
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    return schema.get("items")


def _ref_of(exc: Exception) -> str:
    """` (`#/$defs/x`)`: the reference that did not resolve, as written where it can be told."""
    wrapped = getattr(exc, "_wrapped", exc)
    anchor, ref = getattr(wrapped, "anchor", None), getattr(wrapped, "ref", None)
    if isinstance(anchor, str):
        return f" (`#{anchor}`)"
    if isinstance(ref, str) and ref:
        return f" (`#{ref}`)" if type(wrapped).__name__ == "PointerToNowhere" else f" (`{ref}`)"
    return ""


def non_finite(args: Any) -> list[str]:
    """`path: ...` for each NaN or infinity in the arguments (at most 10). JSON has no such
    numbers, yet JSON Schema's `number` accepts them and every comparison with NaN is false, so
    `deny when args.amount > 500` would let `{"amount": NaN}` through: they are refused here."""
    if type(args) is dict and not any(type(v) in _SCAN for v in args.values()):
        return []  # (flat arguments with no float: nothing to find)
    out: list[str] = []
    stack: list[tuple[Any, list]] = [(args, [])]
    while stack and len(out) < MAX_PROBLEMS:
        value, where = stack.pop()
        if type(value) is float and (value != value or value in (_INF, -_INF)):
            out.append(f"{_path(where)}: expected a finite number (NaN and infinities are not JSON)")
        elif isinstance(value, dict):
            stack.extend((v, where + [k]) for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, where + [i]) for i, v in reversed(list(enumerate(value))))
    return out


_INF = float("inf")
_SCAN = frozenset((float, dict, list, tuple))  # anything else in a flat dict holds no float


def _path(parts, whole: str = "arguments") -> str:
    text = ""
    for p in parts:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or whole


def describe_error(e, root: Any, value: Any, whole: str = "arguments") -> list[str]:
    """A jsonschema error of `value` (against schema `root`) as `path: what was expected`
    lines, never echoing `value` (a secret a redact rule selects must not reach a record, an
    error message or a diagnostic); `whole` names the path of `value` itself."""
    path, v, val = _path(e.absolute_path, whole), e.validator, e.validator_value
    if v == "required":
        have = e.instance if isinstance(e.instance, dict) else {}
        base = list(e.absolute_path)
        return [f"{_path(base + [k], whole)}: required but missing" for k in val if k not in have]
    if v == "additionalProperties":
        extra = _extra_fields(e.schema, e.instance)
        return [f"{_path(list(e.absolute_path) + [k], whole)}: not an allowed field" for k in extra]
    if v is None:  # a `false` schema: jsonschema names neither the field nor its place
        return _refused_fields(e, root, value, whole)
    if v == "items" and val is False:
        return [f"{path}: expected at most {_count(len(e.schema.get('prefixItems') or []), 'item')}"]
    if "propertyNames" in e.relative_schema_path:  # (about a field's name: never named)
        return [f"{path}: field names: {_expected(v, val)}"]
    special = _SPECIAL.get(v)
    if special is not None:  # (never no line: an error with none would let the call through)
        return special(e, root, value, whole) or [f"{path}: does not satisfy `{v}`"]
    return [f"{path}: {_expected(v, val, e.schema)}"]


def describe_default(e, root: Any, value: Any) -> str:
    """`describe_error` of a default value, as one clause: `expected string` for the value
    itself, `` `a.b`: expected integer`` for a part of it."""
    marker = "\x00default"
    lines = describe_error(e, root, value, marker)
    return "; ".join(x[len(marker) + 2:] if x.startswith(marker + ": ") else f"`{x.split(': ', 1)[0]}`: "
                     + x.split(": ", 1)[-1] for x in lines)


def _extra_fields(schema: Any, instance: Any) -> list[str]:
    """The fields `additionalProperties: false` refuses: named in no `properties` and matched by
    no `patternProperties` (a regex search, as JSON Schema and jsonschema read it)."""
    if not isinstance(instance, dict) or not isinstance(schema, dict):
        return []
    props = schema.get("properties") or {}
    patterns = [p for p in (schema.get("patternProperties") or {}) if isinstance(p, str)]
    out = []
    for k in instance:
        if k in props:
            continue
        try:
            if any(re.search(p, k) for p in patterns):
                continue
        except re.error:  # (a pattern Python cannot read: the checker reports it)
            pass
        out.append(k)
    return out


def misspelt_fields(errors, whole: str = "arguments") -> list[tuple[str, str]]:
    """(given, declared) paths: a field an object holds that its schema's `properties` do not
    name, and the declared field the object lacks whose name is close to it (`ordr_id` for
    `order_id`, by `suggest.closest`, required fields first), for each object a jsonschema
    error of `errors` is about (`required`, `additionalProperties`). Names only, never values."""
    from .suggest import closest
    out: list[tuple[str, str]] = []
    seen: set[tuple] = set()
    for e in errors:
        where, obj, schema = tuple(e.absolute_path), e.instance, e.schema
        if e.validator not in ("required", "additionalProperties") or where in seen or not (
                isinstance(obj, dict) and isinstance(schema, dict)
                and isinstance(schema.get("properties"), dict)):
            continue
        seen.add(where)
        absent = [p for p in schema["properties"] if p not in obj]
        required = [p for p in schema.get("required") or () if p in absent]
        for k in _extra_fields(schema, obj):
            close = closest(k, required) or closest(k, absent)
            if close is not None:
                out.append((_path([*where, k], whole), _path([*where, close], whole)))
                absent.remove(close)
                required = [p for p in required if p != close]
    return out


def did_you_mean_fields(pairs: list[tuple[str, str]]) -> str | None:
    """`did you mean `order_id` instead of `ordr_id`?` for `misspelt_fields`, or None."""
    if not pairs:
        return None
    return "did you mean " + ", ".join(f"`{d}` instead of `{g}`" for g, d in pairs) + "?"


def _refused_fields(e, root: Any, args: Any, whole: str = "arguments") -> list[str]:
    """`path: not an allowed field` for the fields a `properties` entry of `false` refuses,
    found from the object and the schema around the error; else one plain problem."""
    where = list(e.absolute_path)
    obj, schema = _at(args, where), _at(root, list(e.absolute_schema_path)[:-1])
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(obj, dict) and isinstance(props, dict):
        keys = [k for k in obj if props.get(k) is False]
        if keys:
            return [f"{_path(where + [k], whole)}: not an allowed field" for k in keys]
    return [f"{_path(where, whole)}: a value where the schema allows none"]


def _at(value: Any, steps: list) -> Any:
    for step in steps:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value


_EXPECT = {
    "type": lambda v: f"expected {' or '.join(v) if isinstance(v, list) else v}",
    "enum": lambda v: "expected one of " + ", ".join(json.dumps(x) for x in v),
    "const": lambda v: f"expected {json.dumps(v)}",
    "pattern": lambda v: f"expected a string matching /{v}/",
    "minimum": lambda v: f"expected a number >= {v}",
    "maximum": lambda v: f"expected a number <= {v}",
    "exclusiveMinimum": lambda v: f"expected a number > {v}",
    "exclusiveMaximum": lambda v: f"expected a number < {v}",
    "minLength": lambda v: f"expected at least {_count(v, 'character')}",
    "maxLength": lambda v: f"expected at most {_count(v, 'character')}",
    "minItems": lambda v: f"expected at least {_count(v, 'item')}",
    "maxItems": lambda v: f"expected at most {_count(v, 'item')}",
    "format": lambda v: f"expected format `{v}`",
    "multipleOf": lambda v: f"expected a multiple of {v}",
    "uniqueItems": lambda v: "expected items that are all different",
    "minProperties": lambda v: f"expected at least {_count(v, 'field')}",
    "maxProperties": lambda v: f"expected at most {_count(v, 'field')}",
}


def _count(n: Any, noun: str) -> str:
    """`1 character`, `3 characters` (what the model reads)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _expected(v: str, val: Any, schema: Any = None) -> str:
    f = _EXPECT.get(v)
    if f is not None:
        return f(val)
    if v in ("contains", "minContains", "maxContains"):
        return _contains(v, val, schema)
    return f"does not satisfy `{v}`"


def _contains(v: str, val: Any, schema: Any) -> str:
    """What `contains` (with `minContains`, `maxContains`) expected: how many matching items."""
    least = schema.get("minContains", 1) if isinstance(schema, dict) else 1
    if v == "maxContains":
        return f"expected at most {_count(val, 'item')} matching its `contains` schema"
    return f"expected at least {_count(least, 'item')} matching its `contains` schema"


def _type_words(schema: Any) -> str | None:
    """A branch of `anyOf`/`oneOf` or a `not` in a few words (its type, constant or choices),
    or None when it says more than that."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(json.dumps(x) for x in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind) and kind:
        return " or ".join(kind)
    return kind if isinstance(kind, str) else None


def _alternatives(e, root: Any, value: Any, whole: str) -> list[str]:
    """`anyOf`/`oneOf`: the problems of the alternatives of the value's type (of each, joined
    by `or`, when there are several); when none is, the alternatives in a few words
    (`expected string or integer`)."""
    path, branches = _path(e.absolute_path, whole), e.validator_value
    if not e.context:  # (`oneOf` matched by more than one alternative)
        return [f"{path}: expected exactly one alternative of `oneOf` to match; more than one did"]
    by_branch: dict[Any, list] = {}
    for c in e.context:
        by_branch.setdefault(c.relative_schema_path[0], []).append(c)
    typed = [errs for errs in by_branch.values() if not any(
        c.validator == "type" and len(c.relative_schema_path) == 2 for c in errs)]
    if len(typed) == 1:
        return [line for c in typed[0] for line in describe_error(c, root, value, whole)]
    if typed:  # (several alternatives of the value's type: what each of them expected)
        each = [[line for c in errs for line in describe_error(c, root, value, whole)]
                for errs in typed]
        head = f"{path}: "
        if all(line.startswith(head) for lines in each for line in lines):
            each = [[line[len(head):] for line in lines] for lines in each]
        else:
            head = ""
        return [head + " or ".join(dict.fromkeys("; ".join(lines) for lines in each))]
    words = [_type_words(b) for b in branches] if isinstance(branches, list) else [None]
    if all(words):
        return [f"{path}: expected {' or '.join(dict.fromkeys(words))}"]
    return [f"{path}: expected a value matching one of the {len(branches)} alternatives of "
            f"`{e.validator}`"]


def _negated(e, root: Any, value: Any, whole: str) -> list[str]:
    words = _type_words(e.validator_value)
    what = f"anything but {words}" if words else "a value its `not` schema refuses"
    return [f"{_path(e.absolute_path, whole)}: expected {what}"]


def _dependent(e, root: Any, value: Any, whole: str) -> list[str]:
    """`dependentRequired`: each missing field, and the field present that requires it."""
    have, base = e.instance if isinstance(e.instance, dict) else {}, list(e.absolute_path)
    deps = e.validator_value if isinstance(e.validator_value, dict) else {}
    return [f"{_path(base + [m], whole)}: required when `{k}` is present"
            for k, needs in deps.items() if k in have for m in needs if m not in have]


def _unevaluated(e, root: Any, value: Any, whole: str) -> list[str]:
    """`unevaluatedProperties`/`unevaluatedItems`: the fields its schema names nowhere (not
    following `$ref`), else the object's or list's path; never the values."""
    path, obj = _path(e.absolute_path, whole), e.instance
    named = _named_fields(e.schema) if e.validator == "unevaluatedProperties" else None
    if named is not None and e.validator_value is False and isinstance(obj, dict):
        extra = [k for k in obj if k not in named]
        if extra:
            return [f"{_path(list(e.absolute_path) + [k], whole)}: not an allowed field"
                    for k in extra]
    if e.validator == "unevaluatedItems":
        return [f"{path}: holds more items than its schema allows"]
    return [f"{path}: holds a field that its schema does not allow"]


def _named_fields(schema: Any, depth: int = 0) -> set | None:
    """The fields `schema` and its in-place subschemas (`allOf`, `anyOf`, `oneOf`, `if`,
    `then`, `else`, `dependentSchemas`) name in `properties`; None when a `patternProperties`
    or a `$ref` may evaluate others (the wording then names the object, not its fields)."""
    if not isinstance(schema, dict):
        return set()
    if depth > 20 or schema.get("patternProperties") or "$ref" in schema or "$dynamicRef" in schema:
        return None
    out = set(schema.get("properties") or ())
    subs = [*(schema.get("allOf") or ()), *(schema.get("anyOf") or ()),
            *(schema.get("oneOf") or ()), *(schema.get(k) for k in ("if", "then", "else")),
            *(schema.get("dependentSchemas") or {}).values()]
    for sub in subs:
        more = _named_fields(sub, depth + 1)
        if more is None:
            return None
        out |= more
    return out


_SPECIAL = {"anyOf": _alternatives, "oneOf": _alternatives, "not": _negated,
            "dependentRequired": _dependent, "unevaluatedProperties": _unevaluated,
            "unevaluatedItems": _unevaluated}


# ---------------------------------------------------------------- the plain check
# Speed: most input schemas lie in the subset schema blocks produce; `schema_quick` compiles
# those once into a check that only ever answers "valid" when JSON Schema would. Anything else,
# and every invalid call, goes to jsonschema, which also words the problems. Compiled once per
# tool, keyed by identity (the entry keeps the tool info alive).
_PLAIN: dict[int, tuple[Any, Any]] = {}


def plainly_valid(info: Any, args: Any) -> bool:
    hit = _PLAIN.get(id(info))
    if hit is None or hit[0] is not info:
        if len(_PLAIN) >= 1024:
            _PLAIN.clear()
        hit = _PLAIN[id(info)] = (info, checker(info.schema))
    check = hit[1]
    return check is not None and type(args) is dict and check(args)
