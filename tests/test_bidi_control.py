"""AFP009 bidi-control: a bidirectional control character anywhere in a spec ("Trojan Source",
CVE-2021-42574) is a warning at the character, whichever parser path read the file."""
from __future__ import annotations

import afp_dsl as afp
from afp_dsl import parser
from afp_dsl.source import SourceFile

RLO, LRI = "\u202e", "\u2066"
SPEC = 'agent a {\n  system = "Be %skind"  # note %s here\n}\n' % (RLO, LRI)


def _warnings(text: str) -> list[tuple[str, str, int]]:
    diags = afp.check(text)
    return [(d.code, d.severity.value, d.primary.span.start) for d in diags]


def test_each_bidi_control_is_a_warning_at_its_place():
    assert _warnings(SPEC) == [("AFP009", "warning", SPEC.index(RLO)),
                               ("AFP009", "warning", SPEC.index(LRI))]
    d = afp.check(SPEC)[0]
    assert d.message == "invisible character U+202E (RIGHT-TO-LEFT OVERRIDE)"
    assert "`\\u202e`" in d.help
    assert afp.load(SPEC).agent(provider=afp.providers.mock(["ok"])).run("hi").answer == "ok"


def test_the_escape_and_other_non_ascii_text_are_not_flagged():
    assert _warnings('agent a { system = "Be \\u202ekind, café, \u200f" }\n') == []


def test_the_tree_parser_reports_them_too(monkeypatch):
    monkeypatch.setattr(parser, "parse_tree", lambda text, name: None)  # (the fast path gives up)
    parsed = parser.parse(SourceFile.of("s.afp", SPEC))
    assert parsed.tree is not None
    assert [(d.code, d.primary.span.start) for d in parsed.diagnostics] == [
        ("AFP009", SPEC.index(RLO)), ("AFP009", SPEC.index(LRI))]


def test_beside_a_syntax_error_too():
    text = 'agent a { system = "x%s" = }\n' % RLO
    assert sorted(c for c, _, _ in _warnings(text)) == ["AFP001", "AFP009"]
