"""A host loads a program once and serves many requests at once (docs/embedding.md, tooling.md §6):
threads running agents of one program, asyncio tasks awaiting `arun`, `check` from several
threads. Each concurrent result must equal the sequential one (answers, traces), and no run's
redaction memory, skill cursor or check-in may reach another's. The interleavings that matter
are forced where they can be (a check started inside another); the stress tests are short."""
from __future__ import annotations

import threading

import afp_dsl as afp
from afp_dsl import checks
from afp_dsl.analysis import Analysis
from afp_dsl.checks import schemas
from afp_dsl.loader import load as load_files

THREADS = 8

# An invalid raw output schema: AFP301 alone, never an AFP304 for `result.zz` (no cascade).
BROKEN = """
agent a { tools = [t] graph = g policies = [p] }
tool t { description = "t" input { x: integer }
         output = { type: "object", properties: { a: 5 }, additionalProperties: false } }
skill s1 { description = "one" tools = [t] }
skill s2 { description = "two" }
graph g { entry s1 route s1 -> s2 on t when result.a == 1 and result.zz > 2 }
policy p { after t { deny when result.a == "x" because "no" } }
"""
CHECKED = [BROKEN, "agent a { tools = [lookup_ordr] }", "examples/support/support.afp",
           "examples/it_helpdesk/it_helpdesk.afp", """
agent b { tools = [t] graph = g }
tool t { description = "t" input { x: integer } output { a: integer } }
skill s1 { description = "one" tools = [t] }
skill s2 { description = "two" }
graph g { entry s1 route s1 -> s2 on t when result.zz > 2 }
"""]


def _in_threads(work, n: int = THREADS) -> list:
    """`work(i)` for i < n, each in its own thread, all released at once; the results in order.
    An exception in a thread is re-raised here."""
    gate, out, errors = threading.Barrier(n), [None] * n, []

    def body(i: int) -> None:
        gate.wait()
        try:
            out[i] = work(i)
        except Exception as e:  # noqa: BLE001 (re-raised in the test's thread)
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def _shown(diags) -> list:
    return [(d.code, d.message, [(lab.span.start, lab.span.end) for lab in d.labels]) for d in diags]


# ---------------------------------------------------------------- check
def test_a_check_ending_inside_another_leaves_its_afp301_schemas_alone():
    """What another thread's check does when it ends between `check_schemas` and the expression
    rules (it used to clear the module-level set of AFP301 schemas, so `result.zz` became an
    AFP304 cascade): forced by a rule that runs a whole check at that point."""
    program = load_files(text=BROKEN, name="<text>").program

    def another_check(_analysis):
        assert afp.check("agent other { }") == []
        return ()
    rules = list(checks.CHECKS)
    rules.insert(rules.index(schemas.check_schemas) + 1, another_check)
    found = checks.run_checks(Analysis(program), tuple(rules))
    assert [d.code for d in found] == ["AFP301"]
    assert not schemas.is_broken(program.modules[0].decls[1].output)  # (dropped with its call)


def test_checks_in_threads_equal_the_sequential_ones():
    expected = [_shown(afp.check(t)) for t in CHECKED]
    assert [e[0][0] for e in expected[:2]] == ["AFP301", "AFP101"] and len(expected[0]) == 1
    rounds = 3
    got = _in_threads(lambda i: [_shown(afp.check(CHECKED[(i + k) % len(CHECKED)]))
                                 for k in range(rounds * len(CHECKED))])
    for i, seen in enumerate(got):
        for k, diags in enumerate(seen):
            assert diags == expected[(i + k) % len(CHECKED)], (i, k)
