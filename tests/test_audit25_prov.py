"""Providers, audit of session 25 (semantics §6, §10, §11): each test failed before its fix.

The demo mock must call the first offered tool "with schema-valid minimal arguments" (§11): for a
schema that some value satisfies, `demo_args` finds one (it used to give up on `allOf`,
`uniqueItems`, `prefixItems`, `contains`, `minProperties`, `if`/`then`, an enum whose first
member the other keywords refuse, ...), and prefers values a format checker accepts too.
"""
from __future__ import annotations

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import afp_dsl as afp
from afp_dsl.frozen import freeze
from afp_dsl.providers.mock_args import demo_args
from interp_support import payloads

_FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def _valid(schema, args) -> bool:
    return args is not None and jsonschema.Draft202012Validator(
        schema, format_checker=_FORMATS).is_valid(args)


def _obj(prop: dict, **more) -> dict:
    return {"type": "object", "properties": {"v": prop}, "required": ["v"], **more}


TRICKY = {
    "unique items": _obj({"type": "array", "items": {"type": "integer"}, "minItems": 3,
                          "uniqueItems": True}),
    "unique enum items": _obj({"type": "array", "items": {"enum": ["a", "b", "c"]},
                               "minItems": 2, "uniqueItems": True}),
    "unique strings with a pattern": _obj({"type": "array", "minItems": 2, "uniqueItems": True,
                                           "items": {"type": "string", "pattern": "^[a-z]$"}}),
    "allOf": {"type": "object", "allOf": [
        {"properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"properties": {"b": {"type": "integer", "minimum": 2}}, "required": ["b"]}]},
    "allOf of a $ref (pydantic)": {"$defs": {"P": {"type": "object", "required": ["n"],
                                                   "properties": {"n": {"type": "string",
                                                                        "minLength": 3}}}},
                                   "type": "object", "required": ["p"],
                                   "properties": {"p": {"allOf": [{"$ref": "#/$defs/P"}]}}},
    "minProperties": {"type": "object", "properties": {"a": {"type": "string"}},
                      "minProperties": 1},
    "minProperties, only additional ones": {"type": "object", "minProperties": 2,
                                            "additionalProperties": {"type": "boolean"},
                                            "propertyNames": {"pattern": "^[a-z]+$"}},
    "required, typed by additionalProperties": {"type": "object", "required": ["q"],
                                                "additionalProperties": {"type": "integer"}},
    "prefixItems": _obj({"type": "array", "prefixItems": [{"type": "string"},
                                                          {"type": "integer"}], "minItems": 2}),
    "contains": _obj({"type": "array", "contains": {"type": "integer", "minimum": 5}}),
    "if/then": {"type": "object", "required": ["k"],
                "properties": {"k": {"enum": ["a", "b"]}, "v": {"type": "string"}},
                "if": {"properties": {"k": {"const": "a"}}}, "then": {"required": ["v"]}},
    "dependentRequired": {"type": "object", "required": ["a"],
                          "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                          "dependentRequired": {"a": ["b"]}},
    "a default the schema refuses": _obj({"type": "integer", "default": "five"}),
    "an enum whose first member is refused": _obj({"type": "string", "minLength": 1,
                                                   "enum": ["", "ok"]}),
    "oneOf beside properties": {"type": "object", "oneOf": [{"required": ["a"]},
                                                            {"required": ["b"]}],
                                "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}},
    "oneOf whose branches overlap": _obj({"oneOf": [{"type": "number"}, {"type": "integer"}]}),
    "a huge exclusive minimum": _obj({"type": "number", "exclusiveMinimum": 1.3e193}),
    "a huge negative exclusive minimum": _obj({"type": "number", "exclusiveMinimum": -5.7e16}),
    "formats": {"type": "object", "required": ["e", "d", "t", "u", "i", "h", "ip"],
                "properties": {"e": {"type": "string", "format": "email"},
                               "d": {"type": "string", "format": "date"},
                               "t": {"type": "string", "format": "date-time"},
                               "u": {"type": "string", "format": "uri"},
                               "i": {"type": "string", "format": "uuid"},
                               "h": {"type": "string", "format": "hostname"},
                               "ip": {"type": "string", "format": "ipv4"}}},
}


@pytest.mark.parametrize("name", TRICKY)
def test_demo_arguments_are_found_for_a_satisfiable_tricky_schema(name):
    schema = TRICKY[name]
    args = demo_args(schema)
    assert _valid(schema, args), (name, args)
    assert _valid(schema, demo_args(freeze(schema))), name  # (tool schemas arrive frozen)


def test_the_demo_run_calls_the_first_tool_with_formatted_arguments():
    spec = ('agent g { tools = [t] }\ntool t { description = "t" input { '
            'mail: string(format: "email"), when: string(format: "date-time"), '
            'tags: [string(pattern: "^[a-z]$")](min_items: 2) } }')
    seen = []
    r = afp.load(spec).agent(tools={"t": lambda **kw: seen.append(kw) or "ran"}).run("go")
    assert [p["status"] for p in payloads(r, "tool.returned")] == ["success"]
    assert seen[0]["mail"] == "a@example.com" and seen[0]["when"] == "2024-01-01T00:00:00Z"


# ---------------------------------------------------------------- property: witnessed schemas
_scalars = st.one_of(st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=6),
                     st.floats(-1e6, 1e6, allow_nan=False), st.none())


def _kind(v) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            type(None): "null", list: "array", dict: "object"}[type(v)]


@st.composite
def _witnessed(draw, value):
    """A schema `value` satisfies, built from `value` with keywords drawn at random."""
    kind = _kind(value)
    s: dict = {"type": kind}
    if kind in ("integer", "number") and draw(st.booleans()):
        s[draw(st.sampled_from(["minimum", "exclusiveMinimum"]))] = value - draw(st.integers(1, 9))
        s[draw(st.sampled_from(["maximum", "exclusiveMaximum"]))] = value + draw(st.integers(1, 9))
    elif kind == "string" and draw(st.booleans()):
        s["minLength"], s["maxLength"] = draw(st.integers(0, len(value))), len(value) + 2
    elif kind == "array":
        items = {"type": _kind(value[0])} if value else {}  # (every item is of that kind)
        s.update(items=items, minItems=draw(st.integers(0, len(value))))
        if len({repr(v) for v in value}) == len(value) and draw(st.booleans()):
            s["uniqueItems"] = True
    elif kind == "object":
        props = {k: draw(_witnessed(v)) for k, v in value.items()}
        s.update(properties=props, required=draw(st.lists(st.sampled_from(list(value)) if value
                                                           else st.nothing(), unique=True)),
                 additionalProperties=False, minProperties=draw(st.integers(0, len(value))))
    wrap = draw(st.sampled_from(["none", "enum", "anyOf", "oneOf", "allOf"]))
    if wrap == "enum" and kind not in ("array", "object"):
        return dict(s, enum=[draw(_scalars), value])
    if wrap == "anyOf":
        return {"anyOf": [{"type": "null", "minimum": 0, "not": {}}, s]}
    if wrap == "oneOf":
        return {"oneOf": [s, {"not": {"type": kind}}]}
    if wrap == "allOf":
        return {"allOf": [s, {"type": kind}]}
    return s


def _values(leaf):
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3).filter(lambda xs: len({_kind(x) for x in xs}) <= 1),
        st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=3)),
        max_leaves=8)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.text("abcd", min_size=1, max_size=3), _values(_scalars), max_size=4)
       .flatmap(_witnessed))
def test_demo_arguments_are_found_whenever_a_witness_exists(schema):
    """Every schema here is satisfied by the value it was built from: a demo call exists."""
    args = demo_args(schema)
    assert args is not None and jsonschema.Draft202012Validator(schema).is_valid(args), schema


# ---------------------------------------------------------------- §11: errors name the fix
_PAGE = ("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title><style>body{color:red}"
         "</style></head><body><center><h1>502 Bad Gateway</h1></center><hr>nginx</body></html>")


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
def test_an_html_error_page_is_named_by_its_title_not_dumped_or_lost(vendor):
    """A proxy's HTML error page: the message shows its title, never the markup (anthropic and
    ollama dumped it whole) nor only `Error code: 502` (openai lost the page's words)."""
    from fakes.clients import make
    from fakes.server import FakeServer, Response
    from afp_dsl.providers import ServerError
    from afp_dsl.providers.base import Message, Request
    with FakeServer(lambda rec: Response(502, _PAGE, content_type="text/html")) as s:
        with pytest.raises(ServerError) as info:
            make(vendor, s.url).complete(Request("s", [Message("user", "hi")], model="m"))
    message = str(info.value)
    assert "server error 502: an HTML page: 502 Bad Gateway;" in message, message
    assert "<" not in message and "color" not in message


def test_a_plain_text_error_body_is_shown():
    from fakes.clients import make
    from fakes.server import FakeServer, Response
    from afp_dsl.providers import ServerError
    from afp_dsl.providers.base import Message, Request
    text = "upstream connect error or disconnect/reset before headers"
    with FakeServer(lambda rec: Response(503, text, content_type="text/plain")) as s:
        with pytest.raises(ServerError, match="upstream connect error"):
            make("openai", s.url).complete(Request("s", [Message("user", "hi")], model="m"))


def test_text_that_only_quotes_a_page_is_left_as_it_is():
    from afp_dsl.providers._errors import clip
    assert clip("no choices in '<html><body>x</body></html>'") == \
        "no choices in '<html><body>x</body></html>'"
    assert clip("<html><body><p>Access &amp; denied</p></body></html>") == \
        "an HTML page: Access & denied"


@pytest.mark.parametrize("vendor,stop", [("openai", "tool_calls"), ("openai", "function_call"),
                                         ("anthropic", "tool_use")])
@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_that_calls_nothing_never_has_stop_reason_tool_use(vendor, stop, stream):
    """providers.md: `tool_use` whenever the reply has tool calls, and only then (the trace's
    `llm.replied` and OpenTelemetry's finish reason said `tool_use` for a final answer)."""
    from fakes.clients import make
    from fakes.server import FakeServer
    from fakes.vendors import VENDORS, Turn, scripted
    from afp_dsl.providers.base import Message, Request
    with FakeServer(scripted(VENDORS[vendor], [Turn("All done.", stop=stop)])) as s:
        reply = make(vendor, s.url, stream=stream).complete(
            Request("s", [Message("user", "hi")], model="m"))
    assert (reply.text, reply.tool_calls, reply.stop_reason) == ("All done.", (), "stop")


@pytest.mark.parametrize("vendor,stop", [("openai", "content_filter"), ("anthropic", "refusal")])
def test_an_empty_refusal_says_the_model_declined_not_retry(vendor, stop):
    """A reply withheld by a content filter (or an Anthropic `refusal` with no text) is an empty
    reply whose message says why: retrying the same request does not help."""
    from fakes.clients import make
    from fakes.server import FakeServer
    from fakes.vendors import VENDORS, Turn, scripted
    from afp_dsl.providers import EmptyReplyError
    from afp_dsl.providers.base import Message, Request
    with FakeServer(scripted(VENDORS[vendor], [Turn("", stop=stop)])) as s:
        with pytest.raises(EmptyReplyError, match="declined to answer") as info:
            make(vendor, s.url).complete(Request("s", [Message("user", "hi")], model="m"))
    assert "retry" not in str(info.value)


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
def test_a_retry_after_given_as_an_http_date_is_waited_for(vendor):
    """RFC 9110 lets `Retry-After` be an HTTP date (proxies send it so): it is read against the
    response's own `Date`, so a 429 says when to come back and `with_retry` waits that long."""
    import time
    from email.utils import formatdate
    from fakes.clients import make
    from fakes.server import FakeServer
    from fakes.vendors import VENDORS
    from afp_dsl.providers import RateLimitedError
    from afp_dsl.providers.base import Message, Request
    when = formatdate(time.time() + 30, usegmt=True)  # (the server adds its own `Date`: now)
    with FakeServer(lambda rec: VENDORS[vendor].error(429, "slow down",
                                                      (("retry-after", when),))) as s:
        with pytest.raises(RateLimitedError) as info:
            make(vendor, s.url).complete(Request("s", [Message("user", "hi")], model="m"))
    assert info.value.retry_after is not None and 25 <= info.value.retry_after <= 31
    assert "retry after" in str(info.value)


# ---------------------------------------------------------------- §11: chosen at run time
def test_the_api_takes_a_provider_by_name_as_the_cli_does(monkeypatch):
    """`--provider NAME[:MODEL]` has an API twin: `program.agent(provider="NAME[:MODEL]")`."""
    from afp_dsl.providers import MissingKeyError, ProviderError
    program = afp.load('agent a { model = "m-spec" }')
    r = program.agent(provider="mock:m-cli").run("hi")
    assert r.outcome == "answered"
    assert payloads(r, "llm.called")[0]["model"] == "m-cli"
    assert program.agent(provider="mock", model="m-arg").run("hi").outcome == "answered"
    with pytest.raises(ProviderError, match="did you mean `openai`"):
        program.agent(provider="opneai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        program.agent(provider="openai")


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_403_says_access_was_refused_not_that_the_key_was_rejected(vendor):
    """A 403 comes with a valid key that may not use the model (or project, or region): the fix
    is the key's access, not the variable's value."""
    from fakes.clients import make
    from fakes.server import FakeServer
    from fakes.vendors import VENDORS
    from afp_dsl.providers import AuthenticationError
    from afp_dsl.providers.base import Message, Request
    body = "You are not allowed to sample from this model"
    with FakeServer(lambda rec: VENDORS[vendor].error(403, body)) as s:
        with pytest.raises(AuthenticationError) as info:
            make(vendor, s.url, model="big-1").complete(
                Request("s", [Message("user", "hi")], model="m"))
    message = str(info.value)
    assert "refused access (403: You are not allowed" in message and "`big-1`" in message
    assert "rejected the API key" not in message


@pytest.mark.parametrize("vendor,body", [
    ("openai", {"error": {"message": "This model's maximum context length is 128000 tokens. "
                          "However, your messages resulted in 130001 tokens.",
                          "type": "invalid_request_error", "param": "messages",
                          "code": "context_length_exceeded"}}),
    ("anthropic", {"type": "error", "error": {"type": "invalid_request_error",
                                              "message": "prompt is too long: 210000 tokens > "
                                                         "200000 maximum"}})])
def test_a_prompt_too_long_for_the_context_window_names_that_fix(vendor, body):
    from fakes.clients import make
    from fakes.server import FakeServer, Response
    from afp_dsl.providers import BadRequestError
    from afp_dsl.providers.base import Message, Request
    with FakeServer(lambda rec: Response(400, body)) as s:
        with pytest.raises(BadRequestError, match="longer than the model's context window"):
            make(vendor, s.url).complete(Request("s", [Message("user", "hi")], model="m"))
