"""`wants_context` reads a plain function's parameters from its code: the same answer as
`inspect.signature` for every kind of parameter, and `inspect` for anything else."""
from __future__ import annotations

import functools
import inspect

import pytest

from afp_dsl.runtime import CONTEXT_PARAM, _plain_function_wants, wants_context


def _positional(x, _context=None): ...
def _keyword_only(x, *, _context): ...
def _positional_only(_context, /, x): ...
def _variadic(*args, **kwargs): ...
def _local(x):
    _context = x
    return _context
def _none(): ...
@functools.wraps(_positional)
def _wrapped(*args, **kwargs): ...
def _with_signature(*args): ...
_with_signature.__signature__ = inspect.Signature(
    [inspect.Parameter(CONTEXT_PARAM, inspect.Parameter.KEYWORD_ONLY)])


class _Host:
    def method(self, _context): ...
    def __call__(self, x): ...


CASES = [_positional, _keyword_only, _positional_only, _variadic, _local, _none, _wrapped,
         _with_signature, lambda _context: 0, lambda x: x, _Host().method, _Host(),
         functools.partial(_positional, 1), print]


def _reference(fn) -> bool:
    try:
        return CONTEXT_PARAM in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


@pytest.mark.parametrize("fn", CASES)
def test_same_answer_as_inspect(fn) -> None:
    assert wants_context(fn) == _reference(fn)


@pytest.mark.parametrize("fn", [_wrapped, _with_signature, _Host().method, functools.partial(_positional, 1)])
def test_anything_but_a_plain_function_asks_inspect(fn) -> None:
    assert _plain_function_wants(fn) is None


def test_a_fresh_closure_per_run_is_read_from_its_code() -> None:
    def bind(n):
        def tool(word, _context=None):
            return word * n
        return tool
    assert all(_plain_function_wants(bind(n)) is True for n in range(3))
