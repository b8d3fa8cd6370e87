"""The cached clean check of recorded payloads never says "clean" where the plain walk would not.

* `Redactor.is_clean` (three verdict caches and a one-regex screen) answers exactly what the
  plain walk below answers (`_clean_walk_plain`: no caches, every string through `_find`), on
  any value, at any point of a sequence of scrubs, `learn`s and `remember`s — secrets remembered
  later (copied into longer strings, used as keys, numbers) turn cached verdicts dirty;
* the caches are shared by the redactors of one rule set while nothing is remembered (the runs
  of one agent): a redactor that remembered a secret trusts no verdict cached by another, and
  a bool, a float or a subclass equal to a cached value never borrows its verdict;
* "clean" implies scrubbing would change, count and remember nothing (so recording the payload
  as it is equals recording its scrubbed copy);
* the screen regex finds nothing only where `_find` finds nothing.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import ir
from afp_dsl.frozen import FrozenMap
from afp_dsl.redaction import Redactor
from afp_dsl.redaction_scan import CACHE_TEXT

SETTINGS = settings(derandomize=True, deadline=None, max_examples=300, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


class Tagged(str):
    """A str subclass equal to a plain string (a cached key or value must not vouch for it)."""


class Loud(str):
    """A str subclass whose text (`str()`) is not its value."""

    def __str__(self) -> str:
        return "token"


class Num(int):
    def __str__(self) -> str:
        return "sk-abcdefghijklmnop"


class Liar(str):
    """A str subclass equal to everything and hashed as a secret (a cached one would vouch)."""

    def __eq__(self, other) -> bool:
        return True

    def __hash__(self) -> int:
        return hash("sk-abcdefghijklmnop")


def _clean_walk_plain(red: Redactor, value) -> bool:
    """The definition: every key an exact str with no match and no rule, every string and number
    text without a match, only plain JSON shapes."""
    t = type(value)
    if t is str:
        return not red._find(value)
    if t is dict or t is FrozenMap:
        for k, v in value.items():
            if type(k) is not str or red._find(k) or red._key_rules(k):
                return False
            if not _clean_walk_plain(red, v):
                return False
        return True
    if t is list or t is tuple:
        return all(_clean_walk_plain(red, v) for v in value)
    if value is None or t is bool:
        return True
    if t is int or t is float:
        return not red._find(str(value))
    return False


RULES = [
    ir.Redact(name="secrets", keys=("password", "api_key", "Token"),
              patterns=(ir.Regex(pattern=r"sk-[A-Za-z0-9]{12,}"), ir.Regex(pattern=r"\b\d{3}-\d{2}-\d{4}\b"))),
    ir.Redact(name="cards", placeholder="[CARD]",
              patterns=(ir.Regex(pattern=r"\b(?P<luhn>(?:\d[ -]?){12,18}\d)\b"),)),
]
PLAIN_RULES = RULES[:1]  # no pattern kept apart: the screen regex is in use
NUMBER_RULES = RULES[:1] + [  # the text "1" and "2.0" match, "1.0", "True" and "2" do not
    ir.Redact(name="numbers", patterns=(ir.Regex(pattern=r"\A1\Z"), ir.Regex(pattern=r"\A2\.0\Z")))]
RULE_SETS = [RULES, PLAIN_RULES, NUMBER_RULES]

words = st.sampled_from(["w1", "call-4-1", "echo", "tool", "token", "TOKEN", "password", "hunter22",
                         "xhunter22y", "sk-abcdefghijklmnop", "123-45-6789", "1234", "4111111111111111",
                         "4111 1111 1111 1111", "", "note", "é€", "a\nb", "12345678", "echo!"])
keys = st.one_of(words, words.map(Tagged), st.sampled_from([1, None, True, 1.5]), st.just(Loud("note")))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2),
                    st.sampled_from([1234, 12345678, 1.0, 2.0, -0.0, 1e16]),
                    st.floats(allow_nan=False), words, words.map(Tagged), st.just(Num(7)), st.just(Num(1)),
                    st.just(Loud("note")), st.just(object()), st.just({1, 2}))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(keys, inner, max_size=3),
    st.dictionaries(words, inner, max_size=2).map(FrozenMap)), max_leaves=8)
secret_values = st.one_of(words, st.sampled_from([1000, 1234, 12345678]), st.lists(words, max_size=2))
ops = st.one_of(
    st.tuples(st.just("check"), values),
    st.tuples(st.just("scrub"), values),
    st.tuples(st.just("learn"), st.dictionaries(st.sampled_from(["token", "password", "note"]), secret_values,
                                                max_size=2)),
    st.tuples(st.just("remember"), secret_values),
)


def _apply(red: Redactor, op: str, value) -> None:
    if op == "scrub":
        red.scrub(value)
    elif op == "learn":
        red.learn(value)
    elif op == "remember":
        red.remember(value)


@SETTINGS
@given(st.sampled_from(RULE_SETS), st.lists(ops, min_size=1, max_size=8))
def test_the_cached_check_is_the_plain_walk(rules, seq) -> None:
    red = Redactor(rules)
    for op, value in seq:
        _apply(red, op, value)
        red._check_clean()  # (the plain walk reads the memory regex as `_find` does)
        assert red.is_clean(value) == _clean_walk_plain(red, value)
        assert red.is_clean(value) == _clean_walk_plain(red, value)  # again, from the caches


@SETTINGS
@given(st.sampled_from(RULE_SETS), st.lists(st.tuples(st.integers(0, 2), ops), min_size=1, max_size=10))
def test_redactors_of_one_rule_set_trust_only_what_the_rules_alone_decide(rules, seq) -> None:
    """Three redactors of one rule set, as three runs of an agent (the third a view sharing the
    first's memory), each answering as the plain walk whatever the others cached or remembered
    (and whatever earlier examples left in the rule set's caches)."""
    first = Redactor(rules)
    reds = [first, Redactor(rules), Redactor(rules, _memory=first._memory)]
    for who, (op, value) in seq:
        _apply(reds[who], op, value)
        for red in reds:
            assert red.is_clean(value) == _clean_walk_plain(red, value)


@SETTINGS
@given(st.sampled_from(RULE_SETS), st.lists(ops, min_size=1, max_size=8))
def test_clean_means_scrubbing_changes_and_remembers_nothing(rules, seq) -> None:
    fast, twin = Redactor(rules), Redactor(rules)
    for op, value in seq:
        for red in (fast, twin):
            _apply(red, op, value)
        if fast.is_clean(value):
            before = (twin.report(), dict(twin._memory.values))
            assert twin.scrub(value, at="$") == value
            assert (twin.report(), dict(twin._memory.values)) == before


def test_a_secret_learned_later_makes_cached_strings_keys_and_numbers_dirty() -> None:
    red = Redactor(PLAIN_RULES)
    payload = {"note": "xhunter22y", "hunter22": 1, "n": 4242}
    assert red.is_clean(payload)
    red.learn({"token": "hunter22"})
    assert not red.is_clean({"note": "xhunter22y"})
    assert not red.is_clean({"hunter22": 1})  # a secret used as a key
    assert red.is_clean({"n": 4242})
    red.learn({"password": 4242})
    assert not red.is_clean({"n": 4242})  # a number remembered as its text
    assert not red.is_clean([4242])


def test_subclasses_never_borrow_a_cached_verdict() -> None:
    red = Redactor(PLAIN_RULES)
    assert red.is_clean({"note": "note"})
    assert not red.is_clean({Tagged("note"): "x"})
    assert not red.is_clean({Loud("note"): "x"})  # `str()` of this key is a redacted key name
    assert red.scrub({Loud("note"): "x"}) == {Loud("note"): "[REDACTED]"}
    assert not red.is_clean({"note": Tagged("note")})
    assert red.is_clean({"n": 7})
    assert not red.is_clean({"n": Num(7)}) and not red.is_clean([True, Num(7)])
    assert red.is_clean([1, True, 1.0]) and not red.is_clean({1: "x"}) and not red.is_clean({None: "x"})


def test_a_run_that_remembers_a_secret_trusts_no_verdict_of_another_run() -> None:
    first = Redactor(PLAIN_RULES)
    payload = {"note": "xhunter22y", "hunter22": 1, "n": 4242}
    assert first.is_clean(payload)  # (cached in the rule set's caches)
    second = Redactor(PLAIN_RULES)
    second.learn({"token": "hunter22", "password": 4242})
    assert not second.is_clean({"note": "xhunter22y"})
    assert not second.is_clean({"hunter22": 1})
    assert not second.is_clean({"n": 4242}) and not second.is_clean([4242])
    assert first.is_clean(payload) and Redactor(PLAIN_RULES).is_clean(payload)  # (nothing remembered)
    Redactor(PLAIN_RULES, _memory=first._memory).remember("xhunter22y")  # a view of the first run
    assert not first.is_clean(payload) and not first.is_clean(["xhunter22y"])
    assert Redactor(PLAIN_RULES).is_clean(payload)


def test_bools_floats_and_int_subclasses_never_borrow_a_cached_verdict() -> None:
    red = Redactor(NUMBER_RULES)
    assert red.is_clean([True, 1.0, 2, "1.0"]) and red.is_clean({"a": True, "b": 1.0, "c": 2})
    assert not red.is_clean([1]) and not red.is_clean({"n": 1}) and not red.is_clean(1)
    assert not red.is_clean([2.0]) and not red.is_clean({"n": 2.0}) and not red.is_clean(2.0)
    assert not red.is_clean({"n": Num(2)}) and not red.is_clean([Num(2)]) and not red.is_clean({"n": "1"})
    assert red.is_clean([True]) and red.is_clean({"n": True})  # (a bool is never scrubbed)


def test_an_object_lying_about_equality_never_vouches_for_a_secret() -> None:
    red = Redactor(PLAIN_RULES)
    red.scrub({"note": Liar("ok")})
    red.scrub_text(Liar("ok"))
    assert not red.is_clean("sk-abcdefghijklmnop") and not red.is_clean({"note": "sk-abcdefghijklmnop"})
    assert not Redactor(PLAIN_RULES).is_clean(["sk-abcdefghijklmnop"])  # (nor in another run)


@SETTINGS
@given(st.sampled_from(RULE_SETS), st.lists(secret_values, max_size=3),
       st.lists(st.one_of(words, st.text(max_size=12)), min_size=1, max_size=5))
def test_the_screen_finds_nothing_only_where_find_finds_nothing(rules, secrets, texts) -> None:
    red = Redactor(rules)
    for s in secrets:
        red.remember(s)
    red._check_clean()
    screen = red._screen
    for text in texts:
        if screen is None or (screen is not False and screen.search(text) is None):
            assert red._find(text) == []
    assert (screen is False) == (rules is RULES)  # the luhn pattern is kept apart


SHORT_RULES = [ir.Redact(name="short", patterns=(ir.Regex(pattern=r"-\d\d"), ir.Regex(pattern=r"(?<=x)yz")))]


@SETTINGS
@given(st.sampled_from([SHORT_RULES, RULES, NUMBER_RULES]), st.lists(secret_values, max_size=2),
       st.lists(st.one_of(st.integers(-1200, 1200), st.text("-0123456789xyz", max_size=5), words),
                min_size=1, max_size=6))
def test_texts_shorter_than_any_match_are_clean_without_a_search(rules, secrets, items) -> None:
    """The clean check skips the search for strings (and ints) shorter than the least width of
    every pattern and remembered secret; at that width and above it searches as before."""
    red = Redactor(rules)
    for s in secrets:
        red.remember(s)
    for item in items:
        assert red.is_clean(item) == _clean_walk_plain(red, item)
        assert red.is_clean([item]) == _clean_walk_plain(red, [item])


def test_the_least_width_bounds_the_shortcut_exactly() -> None:
    red = Redactor(SHORT_RULES)
    red._check_clean()
    assert (red._short, red._int_bound) == (2, 10)  # `(?<=x)yz` matches two characters
    assert red.is_clean([-9, 9, "-1", "yz"]) and not red.is_clean([-12]) and not red.is_clean("x-12")
    assert not red.is_clean("xyz") and not red.is_clean({"n": -10})
    wide = Redactor([ir.Redact(name="wide", patterns=(ir.Regex(pattern=r"\d{6}"),))])
    wide._check_clean()
    assert (wide._short, wide._int_bound) == (6, 100000)
    assert wide.is_clean([99999, -9999, "abcd"]) and not wide.is_clean([123456]) and not wide.is_clean([-123456])
    wide.remember("abcd")  # a shorter secret lowers the bound
    wide._check_clean()
    assert (wide._short, wide._int_bound) == (4, 1000)
    assert not wide.is_clean(["abcd"]) and not wide.is_clean({"n": "xabcdx"})
    wide.remember(1234)
    assert not wide.is_clean([1234]) and wide.is_clean([123, -123])


DIGIT_RULES = [ir.Redact(name="digits", patterns=(ir.Regex(pattern=r"[1-9]\d"),))]  # 10 and on
counters = st.one_of(st.integers(0, 1300), st.integers(-130, 130), st.sampled_from([9999, 10000, 99999]))
short_texts = st.one_of(words, st.text("0123456789xyz-", max_size=4))
count_ops = st.one_of(st.tuples(st.just("check"), st.lists(st.one_of(counters, short_texts), max_size=4)),
                      st.tuples(st.just("remember"), st.sampled_from([1000, 1234, 1216, 9999, "1234", "w1",
                                                                      "call"])))


@SETTINGS
@given(st.sampled_from([DIGIT_RULES, SHORT_RULES, RULES, NUMBER_RULES]),
       st.lists(count_ops, min_size=1, max_size=12))
def test_small_ints_cached_by_block_and_short_texts_noted_inline_are_the_plain_walk(rules, seq) -> None:
    """A small int found clean puts its whole block of `INT_BLOCK` in the cache, and the walks
    note texts shorter than any match without a call: neither vouches for a neighbour (or a
    text) once a secret lowers the least width, whatever was checked before."""
    red = Redactor(rules)
    for op, value in seq:
        if op == "remember":
            red.remember(value)
            continue
        red._check_clean()
        assert red.is_clean(value) == _clean_walk_plain(red, value)
        assert red.is_clean({"n": value}) == _clean_walk_plain(red, {"n": value})  # cached


def test_a_block_of_small_ints_is_forgotten_when_a_secret_is_remembered() -> None:
    red = Redactor(PLAIN_RULES)
    assert red.is_clean([1220]) and 1234 in red._clean_ints  # (its block, 1216 to 1279, is cached)
    assert red.is_clean({"call": 1, "messages": 3}) and {0, 63} <= red._clean_ints
    red.remember(1234)
    assert not red.is_clean([1234]) and not red.is_clean({"n": 1234}) and red.is_clean([1200, 1, 3])
    assert not red.is_clean([True, 1234]) and red.is_clean([True, 1235])
    assert not red.is_clean(["1234"]) and not red.is_clean({"n": "1234"})  # (as long as the secret)
    digits = Redactor(DIGIT_RULES)
    assert digits.is_clean({"n": 9, "t": "9"}) and not digits.is_clean([10]) and not digits.is_clean([63])
    assert not digits.is_clean({"t": "10"}) and not digits.is_clean(["63"])  # (as long as a match)


def test_the_shortcut_width_is_capped_at_the_longest_cached_text() -> None:
    """With every match longer than `CACHE_TEXT`, the walks' inline shortcut stops at that
    length: a longer text is checked by `_clean_str` (searched, never cached)."""
    red = Redactor([ir.Redact(name="long", patterns=(ir.Regex(pattern=r"a{300}"),))])
    red._check_clean()
    assert red._short == CACHE_TEXT + 1
    assert red.is_clean(["b" * 299, {"k": "a" * 299}]) and "b" * 299 not in red._clean
    assert not red.is_clean(["a" * 300]) and not red.is_clean({"k": "x" + "a" * 300})
    assert red.is_clean(["b" * 20]) and "b" * 20 in red._clean


# ---------------------------------------------------------------- ledger rows (shaped check)
def _row(policy, moment, tool, call_id, outcome, reason, span, iteration=1):
    """A `policy.decided` payload as `toolcall_policy.record_decisions` builds it, with its shape."""
    payload = {"policy": policy, "moment": moment, "tool": tool, "call_id": call_id,
               "iteration": iteration, "outcome": outcome, "reason": reason,
               "rule": None if span is None else {"file": span[0], "start": span[1], "end": span[2]}}
    return payload, (outcome, policy, span, reason, moment, tool, type(tool))


row_texts = st.sampled_from(["screen", "echo", "hunter22", "xhunter22y", "sk-abcdefghijklmnop",
                             "123-45-6789", "call-2-1", "note", "token"])
rows = st.tuples(row_texts, st.sampled_from(["before", "after"]),
                 st.one_of(row_texts, row_texts.map(Tagged)),
                 st.one_of(row_texts, row_texts.map(Tagged), st.sampled_from([None, 7])),
                 st.sampled_from(["allow", "deny"]), st.one_of(st.none(), row_texts),
                 st.sampled_from([None, ("<text>", 4, 9), ("sk-abcdefghijklmnop.afp", 1, 2)]),
                 st.sampled_from([1, 2, 1234, 12345678]))
row_ops = st.one_of(st.tuples(st.just("row"), rows), ops)


@SETTINGS
@given(st.sampled_from(RULE_SETS), st.lists(row_ops, min_size=1, max_size=10))
def test_a_ledger_rows_shaped_check_is_the_plain_walk(rules, seq) -> None:
    """`is_clean_shaped` (a shape found clean needs only its call id checked) answers as the plain
    walk for any row, whatever rows, scrubs and remembered secrets came before."""
    red = Redactor(rules)
    for op, value in seq:
        if op != "row":
            _apply(red, op, value)
            continue
        payload, shape = _row(*value)
        red._check_clean()
        expected = _clean_walk_plain(red, payload)
        args = (payload, shape, payload["call_id"], payload["iteration"])
        assert red.is_clean_shaped(*args) == expected
        assert red.is_clean_shaped(*args) == expected  # cached


def test_a_shape_found_clean_is_forgotten_when_a_secret_is_remembered() -> None:
    red = Redactor(PLAIN_RULES)
    payload, shape = _row("screen_args", "before", "echo", "call-1-1", "allow", None, None)
    assert red.is_clean_shaped(payload, shape, "call-1-1")
    later, _ = _row("screen_args", "before", "echo", "call-2-1", "allow", None, None)
    assert red.is_clean_shaped(later, shape, "call-2-1")
    secret, _ = _row("screen_args", "before", "echo", "sk-abcdefghijklmnop", "allow", None, None)
    assert not red.is_clean_shaped(secret, shape, "sk-abcdefghijklmnop")  # the call id is checked
    red.learn({"token": "screen_args"})  # the policy's name is now a secret
    assert not red.is_clean_shaped(later, shape, "call-2-1")


def test_a_clean_shape_still_has_its_iteration_checked() -> None:
    """The iteration is part of a ledger row: a shape found clean at iteration 2 does not vouch
    for the row of iteration 1 when the text "1" matches a pattern."""
    red = Redactor(NUMBER_RULES)
    row2, shape = _row("screen_args", "before", "echo", "call-2-1", "allow", None, None, 2)
    assert red.is_clean_shaped(row2, shape, "call-2-1", 2)
    row1, _ = _row("screen_args", "before", "echo", "call-2-1", "allow", None, None, 1)
    assert not _clean_walk_plain(red, row1)
    assert not red.is_clean_shaped(row1, shape, "call-2-1", 1)
