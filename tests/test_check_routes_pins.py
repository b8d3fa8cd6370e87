"""AFP205/AFP210 over many routes out of one skill: the pairs are narrowed by the paths each
guard pins (`routes._Near`), which must find exactly what every pair would."""
from __future__ import annotations

import random

import afp_dsl
from afp_dsl.checks import routes


def _spec(n: int, seed: int) -> str:
    rnd = random.Random(seed)
    lines = ['agent a { graph = g }',
             'tool t { description = "t" output { x: number, y: string, z: boolean } }',
             'tool u { description = "u" output { x: number } }',
             'skill s { description = "s" tools = [t, u] }']
    lines += [f'skill d{i} {{ description = "d" }}' for i in range(n)]
    lines += ['graph g {', '  entry s']
    for i in range(n):
        guard = rnd.choice([f"result.x == {rnd.randint(0, 40)}", f"result.x == {rnd.randint(0, 40)}.0",
                            f'result.y == "{rnd.choice("abc")}"', f"result.z == {rnd.choice(['true', 'false'])}",
                            f"result.x == {rnd.randint(0, 40)} and result.y == \"{rnd.choice('ab')}\"",
                            f"result.x > {rnd.randint(0, 40)}", "result.x == null"])
        lines.append(f"  route s -> d{rnd.randint(0, n - 1)} on {rnd.choice('tu')} when {guard}")
    return "\n".join(lines + ["}"])


def test_narrowed_pairs_find_what_every_pair_finds(monkeypatch):
    for seed in range(6):
        spec = _spec(120, seed)
        narrowed = [(d.code, d.message) for d in afp_dsl.check(spec)]
        with monkeypatch.context() as m:
            m.setattr(routes._Near, "earlier", lambda self, j: range(j))
            every = [(d.code, d.message) for d in afp_dsl.check(spec)]
        assert narrowed == every, seed
        assert any(code in ("AFP205", "AFP210") for code, _ in every), seed


def test_thousands_of_pinned_routes_are_disjoint_and_silent():
    lines = ['agent a { graph = g }', 'tool t { description = "t" output { x: integer } }',
             'skill s { description = "s" tools = [t] }']
    lines += [f'skill d{i} {{ description = "d" }}' for i in range(3000)]
    lines += ['graph g {', '  entry s'] + [f'  route s -> d{i} on t when result.x == {i}'
                                           for i in range(3000)] + ['}']
    assert afp_dsl.check("\n".join(lines)) == []
