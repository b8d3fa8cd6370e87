"""Audit regression: AFP103 for the names the model sees is one diagnostic per clash
(docs/checks.md), however many of the agent's skills name the second declaration."""
from __future__ import annotations

import afp_dsl


def test_a_clash_reached_through_two_skills_is_one_diagnostic(tmp_path):
    """`t` (baseline) and `lib.t` (in two skills' `tools`) are one clash, not one per mention."""
    (tmp_path / "lib.afp").write_text(
        'tool t { description = "lib" }\n'
        'skill s1 { description = "d" tools = [t] }\n'
        'skill s2 { description = "d" tools = [t] }\n'
        'graph g { entry s1 route s1 -> s2 on t }\n', encoding="utf-8")
    main = tmp_path / "main.afp"
    main.write_text('import "./lib.afp" as lib\nagent a { graph = lib.g tools = [t] }\n'
                    'tool t { description = "mine" }\n', encoding="utf-8")
    found = [d for d in afp_dsl.check(main) if d.code == "AFP103"]
    assert len(found) == 1
    assert found[0].message == "agent `a` offers two different tools named `t`"
