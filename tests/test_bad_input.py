"""Bad input through `afpc` (click's CliRunner) and `afp_dsl.check`: diagnostics or a clear usage
error, the documented exit code, never a traceback, never a hang.

Regression seeds live in tests/corpus/ (any file there is replayed). Slow: the 10 MB file of
declarations runs only with AFP_SLOW=1 (75-110 s on a shared 2-core machine: lark's LALR parse).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import afp_dsl
from afp_dsl import cli, loader
from afp_dsl.lower import RESERVED
from afp_dsl.parser import terminal_patterns
from afp_dsl.render import FORMATS, render
from afp_dsl.source import SourceFile

CORPUS = Path(__file__).parent / "corpus"
SUPPORT = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"
# Every word the grammar treats as a keyword somewhere (reserved or soft).
KEYWORDS = sorted(RESERVED | {w for w in terminal_patterns().values() if w.isidentifier()})


def afpc(*args: str):
    result = CliRunner().invoke(cli.main, list(args))
    out = result.output
    assert "Traceback" not in out, out
    assert "internal error" not in out, out
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, out


def check_file(path: Path, expect_exit: int | tuple[int, ...] = (0, 1), every_format: bool = True) -> str:
    """`afpc check PATH` (and, unless the file is huge, once per `--format`): the text report."""
    code, out = afpc("check", str(path))
    assert code in (expect_exit if isinstance(expect_exit, tuple) else (expect_exit,)), out
    for fmt in FORMATS if every_format else ():
        fcode, _ = afpc("check", "--format", fmt, str(path))
        assert fcode == code
    return out


def api_check(text: str) -> list:
    diags = afp_dsl.check(text if "\n" in text or "{" in text or not text.strip() else text + "\n")
    for d in diags:
        for label in d.labels:
            assert 0 <= label.span.start <= label.span.end
    return diags


# ---------------------------------------------------------------- bytes and encodings
@settings(derandomize=True, deadline=None, max_examples=40, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_diagnostics(tmp_path, data):
    path = tmp_path / "any.afp"
    path.write_bytes(data)
    check_file(path)


def test_a_binary_file_is_reported_as_not_utf8(tmp_path):
    path = tmp_path / "image.afp"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    out = check_file(path, 1)
    assert "AFP006" in out and "not UTF-8" in out


def test_invalid_utf8_names_the_byte(tmp_path):
    path = tmp_path / "latin1.afp"
    path.write_bytes('agent a { system = "café" }\n'.encode("latin-1"))
    out = check_file(path, 1)
    assert "AFP006" in out and "byte 23" in out


def test_a_lone_bom_is_an_empty_spec(tmp_path):
    path = tmp_path / "bom.afp"
    path.write_bytes(b"\xef\xbb\xbf")
    assert "error" not in check_file(path, 0)


def test_nul_bytes_are_reported(tmp_path):
    path = tmp_path / "nul.afp"
    path.write_bytes(b'agent a {\n  system = "x"\x00\n}\n')
    out = check_file(path, 1)
    assert "AFP006" in out and "NUL" in out and ":2:" in afpc("check", "--format", "short", str(path))[1]


def test_an_empty_file_is_clean(tmp_path):
    path = tmp_path / "empty.afp"
    path.write_text("", encoding="utf-8")
    check_file(path, 0)
    assert afp_dsl.check(path) == []


# ---------------------------------------------------------------- size and depth
@pytest.mark.timeout(120)
def test_a_10mb_comment_file_finishes(tmp_path):
    path = tmp_path / "big.afp"
    path.write_text("# " + "x" * 10_000_000 + "\nagent a {}\n", encoding="utf-8")
    check_file(path, 0, every_format=False)


@pytest.mark.skipif(not os.environ.get("AFP_SLOW"), reason="about a minute; set AFP_SLOW=1")
@pytest.mark.timeout(900)
def test_a_10mb_file_of_declarations_finishes(tmp_path):
    unit = ('steering s{i} {{ prompt = "Answer in at most three sentences, please." }}\n'
            'fact f{i} {{ data = {{ name: "Maya", since: 2022 }}, when = message matches /urgent|asap/i }}\n')
    parts, size, i = [], 0, 0
    while size < 10_000_000:
        parts.append(unit.format(i=i))
        size += len(parts[-1])
        i += 1
    path = tmp_path / "big.afp"
    path.write_text("".join(parts), encoding="utf-8")
    started = time.perf_counter()
    code, out = afpc("check", str(path))
    print(f"10 MB of declarations: {time.perf_counter() - started:.1f} s")  # shown with -s
    assert code == 0, out[:2000]


def test_a_file_over_the_size_limit_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.afp"
    with path.open("wb") as f:
        f.truncate(17 * 1024 * 1024)  # sparse: no disk used
    out = check_file(path, 1)
    assert "AFP006" in out and "it is 17,825,792 bytes (17.0 MiB)" in out and "16 MiB" in out


NESTED = {
    "lists": "fact f {{ data = {o}1{c} }}\n",
    "maps": "fact f {{ data = {o}1{c} }}\n",
    "parens": "fact f {{ data = 1, when = {o}message{c} == 1 }}\n",
    "nots": "fact f {{ data = 1, when = {o}message == 1 }}\n",
    "schema": 'tool t {{ description = "d" input {{ {o}b: string{c} }} }}\n',
    "unclosed": "fact f {{ data = {o}\n",
}
BRACKETS = {"lists": ("[", "]"), "maps": ("{a: ", "}"), "parens": ("(", ")"), "nots": ("not ", ""),
            "schema": ("a: { ", " }"), "unclosed": ("[", "")}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", sorted(NESTED))
def test_deep_nesting_is_reported_not_crashed(tmp_path, shape):
    o, c = BRACKETS[shape]
    depth = 10_000 if shape != "schema" else 3_000
    text = NESTED[shape].format(o=o * depth, c=c * depth)
    path = tmp_path / "deep.afp"
    path.write_text(text, encoding="utf-8")
    out = check_file(path, every_format=False)
    if shape in ("lists", "maps", "nots", "schema"):
        assert "AFP007" in out
    elif shape == "unclosed":
        assert "AFP001" in out


def test_a_chain_of_1500_imports_is_checked_and_its_closing_cycle_named(tmp_path, monkeypatch):
    """Before: the loader recursed per import, so about 330 chained modules raised RecursionError
    from `afp_dsl.check` ("nested too deeply", exit 2, from `afpc check`)."""
    monkeypatch.chdir(tmp_path)
    n = 1500
    for i in range(n):
        nxt = f'import "./m{i + 1}.afp" as m{i + 1}\n' if i + 1 < n else 'import "./m0.afp" as m0\n'
        (tmp_path / f"m{i}.afp").write_text(nxt + f'fact f{i} {{ data = "v" }}\n', encoding="utf-8")
    assert [d.code for d in afp_dsl.check(Path("m0.afp"))] == ["AFP108"]
    out = check_file(Path("m0.afp"), expect_exit=1, every_format=False)
    assert f"--> m{n - 1}.afp:1:8" in out and "cycle: `m0.afp` → `m1.afp` → `m2.afp`" in out
    # the cycle's 1,501 modules and 1,500 notes are cut to their ends around a count
    assert f"`m4.afp` → … {n + 1 - 10} more … → `m{n - 4}.afp`" in out and len(out) < 3000, out[:3000]
    assert out.count(" imports ") == 10 and f"… {n - 10} more …" in out


# ---------------------------------------------------------------- line endings, tabs, long lines
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_endings_give_the_same_positions(tmp_path, newline):
    text = newline.join(["agent a {", '  system = "x"', "  bogus = 1", "}", ""])
    path = tmp_path / "eol.afp"
    path.write_bytes(text.encode("utf-8"))
    code, out = afpc("check", "--format", "short", str(path))
    assert code == 1 and ":3:3: error[AFP104]" in out, out


def test_tabs_are_whitespace_and_columns_count_them_once(tmp_path):
    path = tmp_path / "tabs.afp"
    path.write_text('agent\ta\t{\n\tsystem\t=\t"x"\n\tbogus\t=\t1\n}\n', encoding="utf-8")
    code, out = afpc("check", "--format", "short", str(path))
    assert code == 1 and ":3:2: error[AFP104]" in out, out
    assert "bogus" in afpc("check", str(path))[1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("line", [
    'fact f {{ data = "{x}" }}', "# {x}", "agent a{x} {{}}", 'fact f {{ data = "{x}', "fact f {{ data = [{y}] }}",
])
def test_lines_of_100k_characters(tmp_path, line):
    path = tmp_path / "long.afp"
    path.write_text(line.format(x="a" * 100_000, y="1, " * 33_000) + "\n", encoding="utf-8")
    check_file(path)


@pytest.mark.parametrize("text, code", [
    ('agent a { system = "never closed\n}\n', "AFP002"),
    ('agent a { system = "never closed', "AFP002"),
    ('agent a { system = """never\nclosed\n}\n', "AFP002"),
    ('agent a { system = """', "AFP002"),
    ('agent a { system = "bad \\q escape" }\n', "AFP005"),
    ('agent a { system = "tab\tinside" }\n', "AFP00"),
    ('agent a { system = "half \\ud83d of a pair" }\n', "AFP005"),
    ('agent a { system = "\\udc00" }\n', "AFP005"),
])
def test_unterminated_and_invalid_strings(tmp_path, text, code):
    path = tmp_path / "str.afp"
    path.write_text(text, encoding="utf-8")
    out = check_file(path, 1)
    assert code in out, out


@pytest.mark.parametrize("fmt", ["text", "short", "json", "sarif", "github"])
def test_a_lone_surrogate_escape_is_reported_in_every_format_and_compiles_nowhere(tmp_path, fmt):
    """`"\\ud83d"` decoded to a string with no UTF-8 form: `check` accepted it and `compile`, or a
    diagnostic quoting it in JSON or SARIF, ended in an internal error."""
    path = tmp_path / "s.afp"
    path.write_text('graph g { entry a  route a -> b on t when status == "\\ud83d" }\n'
                    'steering s { prompt = "\\ud83d" }\n', encoding="utf-8")
    code, out = afpc("check", "--format", fmt, str(path))
    assert code == 1 and "AFP005" in out and "internal error" not in out, out
    code, out = afpc("compile", str(path))
    assert code == 1 and "internal error" not in out, out
    pair = tmp_path / "pair.afp"
    pair.write_text('steering s { prompt = "\\ud83d\\ude00" }\n', encoding="utf-8")
    assert afpc("compile", str(pair))[0] == 0


def test_a_file_name_that_is_not_utf8_is_a_uri_in_sarif(tmp_path):
    path = os.path.join(os.fsencode(tmp_path), b"x\xff.afp")
    with open(path, "w", encoding="utf-8") as f:
        f.write('agent a { system = "bad \\q" }\n')
    code, out = afpc("check", "--format", "sarif", os.fsdecode(path))
    assert code == 1 and '"uri": "' in out and "x%FF.afp" in out, out


@pytest.mark.parametrize("text", ["fact f { data = 1e999 }", 'tool t { description = "d" impl = returns(-1e999) }',
                                  'tool t { description = "d" input { a: number(min: 1e999) } }'])
def test_numbers_that_overflow_are_reported(tmp_path, text):
    path = tmp_path / "inf.afp"
    path.write_text(text + "\n", encoding="utf-8")
    code, out = afpc("compile", str(path))
    assert "Infinity" not in out and code == 1, out


@pytest.mark.timeout(120)
def test_a_huge_path_index_is_cheap():
    """Run in a child process under a 1 GB address-space cap and a 10 s limit."""
    spec = ('tool t { description = "d" }\nskill a { description = "d", tools = [t] }\n'
            'skill b { description = "d" }\n'
            'graph g { entry a  route a -> b on t when result.items[1000000000] == 1 }\nagent x { graph = g }\n')
    code = ("import resource, afp_dsl; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY)); "
            f"afp_dsl.check({spec!r}); print('ok')")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("check did not finish in 10 s")
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


# ---------------------------------------------------------------- every keyword cut short
CONTEXTS = ["{kw}", "{kw} x", "agent a {{ {kw} }}", "graph g {{ {kw} }}", "policy p {{ {kw} }}",
            "test t {{ {kw} }}", "tool t {{ {kw} }}", "skill s {{ steps {{ {kw} }} }}",
            "fact f {{ data = 1, when = a {kw} }}", 'tool t {{ description = "d" input {{ {kw}: string }} }}']


@pytest.mark.parametrize("kw", KEYWORDS)
def test_every_keyword_cut_at_every_prefix(kw):
    for cut in range(1, len(kw) + 1):
        for context in CONTEXTS:
            text = context.format(kw=kw[:cut]) + "\n"
            diags = api_check(text)
            for fmt in FORMATS:
                render(diags, {"<text>": text}, fmt)


def test_keywords_cut_inside_a_real_spec():
    text = SUPPORT.read_text(encoding="utf-8")
    for kw in KEYWORDS:
        at = text.find(f" {kw} ")
        if at == -1:
            continue
        for cut in range(len(kw)):
            mutated = text[:at + 1] + kw[:cut] + text[at + 1 + len(kw):]
            diags = api_check(mutated)
            assert all(d.labels[0].span.end <= len(mutated) for d in diags if d.labels)


# ---------------------------------------------------------------- files and folders
def test_a_file_that_vanishes_between_listing_and_reading(tmp_path, monkeypatch):
    path = tmp_path / "gone.afp"
    path.write_text("agent a {}\n", encoding="utf-8")
    listed = cli.collect_files

    def list_then_delete(paths, **how):
        files = listed(paths, **how)
        path.unlink()
        return files

    monkeypatch.setattr(cli, "collect_files", list_then_delete)
    code, out = afpc("check", str(tmp_path))
    assert code == 1 and "AFP109" in out and "no such file" in out, out


@pytest.mark.parametrize("error", [FileNotFoundError(2, "No such file or directory"),
                                   PermissionError(13, "Permission denied"), IsADirectoryError(21, "Is a directory")])
def test_a_read_that_fails_midway_is_a_diagnostic(tmp_path, monkeypatch, error):
    path = tmp_path / "flaky.afp"
    path.write_text("agent a {}\n", encoding="utf-8")

    def fail(path):
        raise error

    monkeypatch.setattr(loader, "read_bytes", fail)
    code, out = afpc("check", str(path))
    assert code == 1 and "AFP006" in out, out


def test_a_folder_without_afp_files(tmp_path):
    (tmp_path / "notes.txt").write_text("agent a {}\n", encoding="utf-8")
    (tmp_path / "sub.afp").mkdir()  # a folder named like a spec is not a spec
    code, out = afpc("check", str(tmp_path))
    assert code == 0 and "no .afp files found" in out, out


def test_a_folder_without_afp_files_still_gets_a_machine_report(tmp_path):
    """Before: `--format sarif` (or json) printed nothing, and a SARIF upload of the empty file
    failed; now the report is there, with no results."""
    import json
    for fmt, empty in (("json", []), ("sarif", None)):
        out_file = tmp_path / f"report.{fmt}"
        code, _ = afpc("check", str(tmp_path), "--format", fmt, "-o", str(out_file))
        report = json.loads(out_file.read_text(encoding="utf-8"))
        assert code == 0
        if empty is not None:
            assert report == empty
        else:
            assert report["version"] == "2.1.0" and report["runs"][0]["results"] == []


def test_a_path_that_does_not_exist_is_reported_as_file_not_found(tmp_path):
    """AFP109 in the report (every format), beside the other paths' findings, exit 1; before, a
    usage error (exit 2) that checked nothing and left a JSON or SARIF report empty."""
    import json
    (tmp_path / "support.afp").write_text("agent a { system = \"x\" }\n", encoding="utf-8")
    (tmp_path / "broken.afp").write_text("agent {\n", encoding="utf-8")
    code, out = afpc("check", str(tmp_path / "suport.afp"))
    assert code == 1 and "error[AFP109]" in out and "no such file" in out, out
    assert f"did you mean `{tmp_path / 'support.afp'}`?" in out, out
    code, out = afpc("check", str(tmp_path / "broken.afp"), str(tmp_path / "nope"), "--format", "json")
    report = json.loads(out[:out.rindex("]") + 1])
    assert code == 1 and sorted(d["code"] for d in report) == ["AFP001", "AFP109"], report
    assert "did you mean" not in out, out
    for command in (("compile",), ("graph",), ("run", "-m", "hi")):
        code, out = afpc(*command[:1], str(tmp_path / "suport.afp"), *command[1:])
        assert code == 1 and "error[AFP109]" in out and "did you mean" in out, (command, out)


def test_a_folder_passed_to_compile_is_a_usage_error(tmp_path):
    code, out = afpc("compile", str(tmp_path))
    assert code == 2 and "Usage:" in out and "is a directory" in out, out


def test_compile_of_bad_input_exits_1(tmp_path):
    path = tmp_path / "bad.afp"
    path.write_bytes(b"\xff\xfe agent")
    code, out = afpc("compile", str(path))
    assert code == 1 and "AFP006" in out, out


def test_a_dangling_symlink_is_a_diagnostic(tmp_path):
    link = tmp_path / "dangling.afp"
    link.symlink_to(tmp_path / "nowhere.afp")
    code, out = afpc("check", str(link))
    assert code == 1 and "AFP006" in out, out


def test_a_symlink_loop_is_a_diagnostic(tmp_path):
    link = tmp_path / "loop.afp"
    link.symlink_to(link)
    code, out = afpc("check", str(link))
    assert code == 1 and "AFP006" in out, out


# ---------------------------------------------------------------- regression corpus
@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", sorted(p.name for p in CORPUS.glob("*") if p.is_file() and p.name != "README.md"))
def test_corpus_replays_cleanly(tmp_path, seed):
    data = (CORPUS / seed).read_bytes()
    path = tmp_path / "seed.afp"
    path.write_bytes(data)
    check_file(path)
    text = data.decode("utf-8", "replace")
    diags = api_check(text)
    SourceFile.of("<text>", text)
    for fmt in FORMATS:
        render(diags, {"<text>": text}, fmt)


def test_a_spec_that_is_not_utf8_is_told_the_fix(tmp_path) -> None:
    """tooling §3: every diagnostic names the fix, the unreadable file's too."""
    bad = tmp_path / "latin1.afp"
    bad.write_bytes('agent a { system = "café" }\n'.encode("latin-1"))
    (d,) = afp_dsl.check(bad)
    assert d.code == "AFP006" and "not UTF-8" in d.message
    assert d.help == "save the file as UTF-8 (a spec is UTF-8 text; is it a binary file?)"
    (d,) = afp_dsl.check(tmp_path)
    assert d.code == "AFP006" and d.help and "folder" in d.help


@pytest.mark.parametrize("path", ["\ud800.afp", "dir\ud800/x.afp", Path("\udfff.afp")])
def test_a_path_no_file_can_have_is_a_diagnostic_not_an_exception(path) -> None:
    """tooling §6: `check` never raises for bad input, `load` raises CompileError."""
    (d,) = afp_dsl.check(path)
    assert d.code == "AFP109" and "no file can have this name" in d.message
    with pytest.raises(afp_dsl.CompileError):
        afp_dsl.load(path)
