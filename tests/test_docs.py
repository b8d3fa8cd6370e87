"""The documentation's code blocks: every ```afp block checks clean, every ```afp-error block fails.

Blocks are taken from docs/*.md and README.md. Each ```afp block is checked on its own, as spec
text, and must produce no diagnostic at all; ```afp-error blocks must produce at least one error;
```afp-fragment blocks are partial and skipped. Blocks that hold `test` declarations also run.
A fence may name a file (```afp file=library.afp); tests/test_docs_commands.py writes it out and
runs the page's shell commands against it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import afp_dsl
from afp_dsl import ir
from afp_dsl.diagnostics import Severity

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "examples" / "README.md"]
# An info string may carry attributes after the kind, e.g. ```afp file=library.afp (the commands
# test writes such blocks to that file before running the page's shell commands).
FENCE = re.compile(r"^```(afp|afp-error|afp-fragment)(?:[ \t]+[^\n`]*)?[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(kind: str) -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        if not doc.is_file():
            continue
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == kind:
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{doc.relative_to(ROOT).as_posix()}:{line}", m.group(2)))
    return out


GOOD = blocks("afp")
BAD = blocks("afp-error")


def _ids(items: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in items]


def _render(diags: list) -> str:
    return "\n".join(f"{d.code} {d.severity}: {d.message}" for d in diags)


def test_the_reference_has_examples():
    assert len([w for w, _ in GOOD if w.startswith("docs/language.md")]) >= 15
    assert any(w.startswith("docs/language.md") for w, _ in BAD)


@pytest.mark.parametrize("where,text", GOOD, ids=_ids(GOOD))
def test_afp_block_checks_clean(where: str, text: str):
    diags = afp_dsl.check(text)
    assert diags == [], f"{where}\n{_render(diags)}"


@pytest.mark.parametrize("where,text", BAD, ids=_ids(BAD))
def test_afp_error_block_fails(where: str, text: str):
    diags = afp_dsl.check(text)
    assert any(d.severity == Severity.ERROR for d in diags), f"{where}: expected an error"


@pytest.mark.parametrize("where,text", [(w, t) for w, t in GOOD if re.search(r"^test \w+", t, re.M)],
                         ids=_ids([(w, t) for w, t in GOOD if re.search(r"^test \w+", t, re.M)]))
def test_afp_block_tests_pass(where: str, text: str):
    from afp_dsl.testing import run_test
    program = afp_dsl.load(text)
    failed = []
    for decl in program.ir.root_module.decls:
        if isinstance(decl, ir.Test):
            r = run_test(program, decl, where)
            if not r.passed:
                failed.append(f"{decl.name}: {r.error or ''}\n" + "\n".join(r.failures))
    assert not failed, f"{where}\n" + "\n\n".join(failed)


@pytest.mark.parametrize("where,text", GOOD, ids=_ids(GOOD))
def test_afp_block_round_trips(where: str, text: str):
    from afp_dsl.serde import ir_from_json, ir_to_json
    program = afp_dsl.load(text).ir
    assert ir_from_json(ir_to_json(program)) == program


# ---------------------------------------------------------------- docs/diagnostics.md (generated)
@pytest.mark.parametrize("where,text", GOOD, ids=_ids(GOOD))
def test_afp_block_is_in_the_canonical_layout(where: str, text: str):
    # what a reader copies is what `afpc fmt` keeps: the pages show the layout it writes
    assert afp_dsl.format_source(text) == text, f"{where}: run `afpc fmt` on this block"


def test_diagnostics_page_is_current():
    """docs/diagnostics.md is generated from codes.REGISTRY; regenerate it when this fails:
    `python -m afp_dsl.docgen diagnostics > docs/diagnostics.md`."""
    from afp_dsl.docgen import diagnostics_page
    committed = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    assert committed == diagnostics_page(), \
        "docs/diagnostics.md is stale: run `python -m afp_dsl.docgen diagnostics > docs/diagnostics.md`"


def test_diagnostics_sections_match_afpc_explain():
    """Each code has its anchor (the SARIF helpUri target) and exactly `afpc explain CODE`'s text."""
    from click.testing import CliRunner

    from afp_dsl import codes
    from afp_dsl.cli import main
    page = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    runner = CliRunner()
    for code in codes.REGISTRY:
        anchor = f'<a id="{code.lower()}"></a>'
        assert page.count(anchor) == 1, code
        printed = runner.invoke(main, ["explain", code]).output
        section = page.split(anchor, 1)[1]
        body = section.split("```text\n", 1)[1].split("\n```", 1)[0]
        assert body + "\n" == printed, code


def test_docgen_rejects_an_unknown_page(capsys):
    from afp_dsl.docgen import main
    assert main(["nope"]) == 2
    assert "usage" in capsys.readouterr().err


def test_getting_started_steps_add_up_to_the_whole_file():
    """Each step shown on docs/getting-started.md is part of the file the page then checks and runs."""
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    whole = re.search(r"^```afp file=library\.afp\n(.*?)^```", text, re.M | re.S)
    assert whole is not None
    fragments = [m.group(2) for m in FENCE.finditer(text) if m.group(1) == "afp-fragment"]
    assert len(fragments) >= 5
    for fragment in fragments:
        assert fragment in whole.group(1), fragment


LINK = re.compile(r"\]\(([^()\s]*?)(?:#([^()\s]*))?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*$", re.M)
CODE_BLOCK = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(path: Path) -> set[str]:
    """GitHub's heading slugs (with -1, -2 for repeats) plus explicit `<a id="...">` anchors."""
    text = CODE_BLOCK.sub("", path.read_text(encoding="utf-8"))
    out: set[str] = set(re.findall(r'<a id="([^"]+)"', text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(text):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


@pytest.mark.parametrize("doc", [d for d in DOCS if d.is_file()], ids=lambda d: d.name)
def test_relative_links_resolve(doc: Path):
    """Every relative link of the book points at a file that exists, and at an anchor of it."""
    text = CODE_BLOCK.sub("", doc.read_text(encoding="utf-8"))
    broken = []
    for target, anchor in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        path = (doc.parent / target) if target else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}#{anchor}")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links {broken}"


def test_getting_started_why_sample_is_what_why_prints(tmp_path, monkeypatch, capsys):
    """The `why` text docs/getting-started.md shows is what its Python block prints (run ids
    aside): the sample had drifted (a policy line without its `(library.afp:44)`)."""
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    spec = re.search(r"^```afp file=library\.afp\n(.*?)^```", text, re.M | re.S)
    block = re.search(r"^```python\n(.*?print\(result\.why\(\)\)\n)```\n\n```text\n(.*?)^```",
                      text, re.M | re.S)
    assert spec is not None and block is not None
    (tmp_path / "library.afp").write_text(spec.group(1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "getting-started.md", "exec"), {})
    printed = re.sub(r"run-[0-9a-f]+", "run-…", capsys.readouterr().out)
    assert printed == block.group(2)


# ---------------------------------------------------------------- docs/cli.md covers `afpc --help`
def _cli_sections() -> dict[str, str]:
    """docs/cli.md's `## afpc X` sections by heading, each with its text."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _afpc_options() -> list[tuple[str, str]]:
    """(command path, option) for every subcommand and option `afpc ... --help` lists."""
    import click

    from afp_dsl.cli import main
    out = []

    def walk(group: click.Group, prefix: str) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            path = f"{prefix} {name}".strip()
            if isinstance(cmd, click.Group):
                walk(cmd, path)
            out.append((path, ""))
            for param in cmd.params:
                if isinstance(param, click.Option):
                    out.extend((path, opt) for opt in param.opts + param.secondary_opts)
    walk(main, "")
    return out


@pytest.mark.parametrize("command,option", _afpc_options(), ids=lambda v: v or "-")
def test_every_afpc_option_is_documented_in_its_section(command: str, option: str):
    """Each subcommand has its `## afpc X` section in docs/cli.md (`why` and `trace` share one),
    and each of its options is named there, in code, with a value or `|`, `]`, `,`, `)` after it."""
    top = command.split()[0]
    [section] = [text for heading, text in _cli_sections().items() if f"`afpc {top}`" in heading]
    if option:
        assert re.search(rf"`[^`\n]*(?<![\w-]){re.escape(option)}(?![\w-])[^`\n]*`", section) or \
            re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", _synopses(section)), \
            f"`afpc {command} {option}` is not documented in docs/cli.md's section on `afpc {top}`"


def _synopses(section: str) -> str:
    return "\n".join(re.findall(r"^```text\n(.*?)^```", section, re.M | re.S))


def test_every_public_name_is_documented_in_embedding_md():
    page = (ROOT / "docs" / "embedding.md").read_text(encoding="utf-8")
    missing = [name for name in afp_dsl.__all__ if f"`afp.{name}" not in page]
    assert not missing, f"docs/embedding.md does not document afp_dsl.{missing}"


def test_trace_why_sample_is_an_excerpt_of_what_why_prints(tmp_path, monkeypatch):
    """docs/trace.md's `afpc why` tree (support, script `small_refund`) is what `afpc why` prints,
    with lines left out at each `...`: every other line, in order (run ids aside). Two lines had
    drifted (an evidence line cut short, a call without its `(support.afp:29)`)."""
    import shutil

    from click.testing import CliRunner

    from afp_dsl.cli import main
    text = (ROOT / "docs" / "trace.md").read_text(encoding="utf-8")
    sample = re.search(r"^```text\n(\[r-1:\d+\] answer .*?)^```", text, re.M | re.S)
    assert sample is not None
    shutil.copy(ROOT / "examples" / "support" / "support.afp", tmp_path / "support.afp")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    ran = runner.invoke(main, ["run", "support.afp", "--script", "small_refund",
                               "-m", "I was charged twice for order AB-12"])
    assert ran.exit_code == 0, ran.output
    why = runner.invoke(main, ["why", "last"])
    assert why.exit_code == 0, why.output
    printed = re.sub(r"\brun-[0-9a-f]+", "r-1", why.stdout).splitlines()
    at = 0
    for line in sample.group(1).splitlines():
        if line.strip() == "...":
            continue
        assert line in printed[at:], f"not printed (in this order) by `afpc why`: {line!r}"
        at = printed.index(line, at) + 1


def test_the_way_to_deal_with_a_warning_is_written_where_the_pages_point():
    """docs/diagnostics.md sent readers to checks.md for "how to silence a warning", a section
    that did not exist (there is no switch), and AFP205's fix said to "accept the order
    explicitly", which no syntax does. The pointer now lands on checks.md's Warnings section,
    which says what a warning does and how it goes away."""
    from afp_dsl import codes
    diagnostics = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    assert "(checks.md#warnings)" in diagnostics and "how to silence" not in diagnostics
    assert "warnings" in anchors(ROOT / "docs" / "checks.md")
    checks = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    section = checks.split("\n## Warnings\n", 1)[1].split("\n## ", 1)[0]
    assert "--strict" in section and "no comment, attribute or option" in section
    assert not [c.id for c in codes.REGISTRY.values() if "explicitly" in c.explanation]


def test_every_check_time_code_says_how_to_fix_it():
    """`afpc explain` ends each code with its fix; AFP405 test-args-invalid had none."""
    from afp_dsl import codes
    missing = [c.id for c in codes.REGISTRY.values() if "\nFix: " not in c.explanation
               and not c.explanation.startswith("Fix: ")]
    assert not missing, missing


def test_the_afp_store_variable_names_every_command_that_takes_a_store():
    """docs/cli.md's AFP_STORE row named `run`, `resume`, `why` and `trace`, not `graph --run`,
    which reads it too (its `--store` defaults to it)."""
    row = next(line for line in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `AFP_STORE` |"))
    takes = sorted({cmd.split()[0] for cmd, opt in _afpc_options() if opt == "--store"})
    missing = [c for c in takes if f"`{c}`" not in row and f"`{c} " not in row]
    assert not missing, f"the AFP_STORE row of docs/cli.md does not name {missing}"


def test_every_environment_variable_afp_reads_is_in_the_cli_table():
    """The variables the package reads by name (`ALLOW_ENV` of std/tools' `http_get` was
    missing from docs/cli.md's table) each have a row."""
    import afp_dsl.stdtools
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    table = page.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r'environ(?:\.get)?[\[(]"([A-Z][A-Z0-9_]+)"',
                           "\n".join(p.read_text(encoding="utf-8")
                                     for p in (ROOT / "afp_dsl").glob("*.py"))))
    names |= {afp_dsl.stdtools.ALLOW_ENV}
    names -= {"XDG_CACHE_HOME"}  # (where lark's cache goes: the usual meaning)
    missing = sorted(n for n in names if f"`{n}`" not in table)
    assert not missing, f"docs/cli.md's environment table lacks {missing}"
