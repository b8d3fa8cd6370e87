"""`afpc fmt` (tooling.md §2, docs/cli.md): in-place rewrites, `--check`, `--diff`, standard
input, folders, and every file it must leave alone saying why (exit codes 0, 1, 2)."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from click.testing import CliRunner

from afp_dsl import fmt as fmt_module
from afp_dsl.cli import main

ROOT = Path(__file__).resolve().parent.parent
MESSY = 'agent a {\n\n    model="m"\n  system = "s"   \n}\n\n\n'
TIDY = 'agent a {\n  model  = "m"\n  system = "s"\n}\n'
BROKEN = 'agent a {\n  model = "m"\n'


def cli(*args, stdin=None):
    return CliRunner().invoke(main, ["fmt", *map(str, args)], input=stdin)


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_the_examples_and_the_standard_library_are_formatted():
    res = cli("--check", ROOT / "examples", ROOT / "stdlib")
    assert res.exit_code == 0, res.output
    assert "would be reformatted" in res.stderr and "0 files would be" in res.stderr


def test_rewrites_in_place_and_says_so(tmp_path):
    spec = write(tmp_path / "a.afp", MESSY)
    tidy = write(tmp_path / "b.afp", TIDY)
    os.chmod(spec, 0o640)
    before = tidy.stat().st_mtime_ns
    res = cli(tmp_path)
    assert res.exit_code == 0, res.output
    assert spec.read_text(encoding="utf-8") == TIDY
    assert stat.S_IMODE(spec.stat().st_mode) == 0o640
    assert tidy.stat().st_mtime_ns == before  # an unchanged file is not rewritten
    assert f"reformatted {spec}" in res.stderr and str(tidy) not in res.stderr
    assert "1 file reformatted, 1 file unchanged" in res.stderr
    assert res.stdout == ""
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_check_writes_nothing_and_exits_1_when_a_file_would_change(tmp_path):
    spec = write(tmp_path / "a.afp", MESSY)
    res = cli("--check", spec)
    assert res.exit_code == 1
    assert spec.read_text(encoding="utf-8") == MESSY
    assert f"would reformat {spec}" in res.stderr
    write(spec, TIDY)
    res = cli("--check", spec)
    assert res.exit_code == 0 and "would reformat" not in res.stderr


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path):
    spec = write(tmp_path / "a.afp", MESSY)
    res = cli("--diff", spec)
    assert res.exit_code == 0
    assert spec.read_text(encoding="utf-8") == MESSY
    assert f"--- {spec} (original)" in res.stdout and f"+++ {spec} (formatted)" in res.stdout
    assert '-    model="m"\n' in res.stdout and '+  model  = "m"\n' in res.stdout
    assert cli("--diff", "--check", spec).exit_code == 1


def test_a_file_without_a_final_newline_shows_so_in_the_diff(tmp_path):
    spec = write(tmp_path / "a.afp", "agent a {}")
    assert "\\ No newline at end of file" in cli("--diff", spec).stdout


def test_a_syntax_error_is_reported_as_check_does_and_the_file_left_alone(tmp_path):
    bad = write(tmp_path / "a.afp", BROKEN)
    other = write(tmp_path / "b.afp", MESSY)
    res = cli(tmp_path)
    assert res.exit_code == 1
    assert bad.read_text(encoding="utf-8") == BROKEN
    assert other.read_text(encoding="utf-8") == TIDY  # the other files are still formatted
    assert "error[AFP001]" in res.stderr and f"--> {bad}:3:1" in res.stderr
    assert f"afpc: {bad} does not parse; it was not formatted" in res.stderr
    assert "Traceback" not in res.output


def test_unreadable_files_are_named_and_left_alone(tmp_path):
    (tmp_path / "latin1.afp").write_bytes(b'agent a { system = "caf\xe9" }\n')
    (tmp_path / "dangling.afp").symlink_to(tmp_path / "nowhere.afp")
    res = cli(tmp_path)
    assert res.exit_code == 1
    assert f"cannot read {tmp_path / 'latin1.afp'}: it is not UTF-8 text (byte 23)" in res.stderr
    assert f"cannot read {tmp_path / 'dangling.afp'}: it is a symbolic link to `" in res.stderr
    assert (tmp_path / "latin1.afp").read_bytes() == b'agent a { system = "caf\xe9" }\n'


def test_a_missing_path_is_named_and_the_others_formatted(tmp_path):
    (tmp_path / "a.afp").write_text("agent   a {}\n", encoding="utf-8")
    res = cli(tmp_path / "nope.afp", tmp_path / "a.afp")
    assert res.exit_code == 1 and f"cannot read {tmp_path / 'nope.afp'}: no such file" in res.stderr
    assert (tmp_path / "a.afp").read_text(encoding="utf-8") == "agent a {}\n"
    assert cli().exit_code == 2


def test_a_folder_without_specs_says_so(tmp_path):
    res = cli(tmp_path)
    assert res.exit_code == 0 and "no .afp files found" in res.stderr


def test_a_symbolic_link_stays_a_link(tmp_path):
    target = write(tmp_path / "real.afp", MESSY)
    link = tmp_path / "link.afp"
    link.symlink_to(target)
    assert cli(link).exit_code == 0
    assert link.is_symlink() and target.read_text(encoding="utf-8") == TIDY



def test_a_file_that_cannot_be_written_is_named_and_left_whole(tmp_path, monkeypatch):
    from afp_dsl import cli_fmt
    spec = write(tmp_path / "a.afp", MESSY)

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(cli_fmt.os, "replace", refuse)
    res = cli(spec)
    assert res.exit_code == 1
    assert f"cannot write {spec}: Permission denied; it was left as it was" in res.stderr
    assert spec.read_text(encoding="utf-8") == MESSY
    assert [p.name for p in tmp_path.iterdir()] == ["a.afp"]  # the temporary copy is removed


def test_standard_input_to_standard_output():
    res = cli("-", stdin=MESSY)
    assert res.exit_code == 0 and res.stdout == TIDY
    res = cli("--check", "-", stdin=MESSY)
    assert res.exit_code == 1 and res.stdout == "" and "would reformat <stdin>" in res.stderr
    assert cli("--check", "-", stdin=TIDY).exit_code == 0
    res = cli("--diff", "-", stdin=MESSY)
    assert res.exit_code == 0 and "+++ <stdin> (formatted)" in res.stdout


def test_standard_input_with_a_syntax_error_prints_nothing_to_stdout():
    res = cli("-", stdin=BROKEN)
    assert res.exit_code == 1 and res.stdout == ""
    assert "error[AFP001]" in res.stderr and "<stdin>:3:1" in res.stderr


def test_standard_input_that_is_not_utf8():
    res = CliRunner().invoke(main, ["fmt", "-"], input=b"agent a { x = \"\xff\" }")
    assert res.exit_code == 1 and "standard input is not UTF-8 text (byte 15)" in res.stderr


def test_standard_input_is_alone():
    res = cli("-", "x.afp", stdin=MESSY)
    assert res.exit_code == 2 and "cannot be mixed" in res.stderr


def test_a_formatter_bug_leaves_the_file_and_exits_2(tmp_path, monkeypatch):
    spec = write(tmp_path / "a.afp", MESSY)
    monkeypatch.setattr(fmt_module, "layout", lambda toks: "".join(t.text for t in toks) + "\n")
    res = cli(spec)
    assert res.exit_code == 2
    assert "internal error" in res.stderr and str(spec) in res.stderr
    assert spec.read_text(encoding="utf-8") == MESSY


def test_standard_output_keeps_ansi_escapes_of_the_spec():
    """click strips ANSI escapes from what it prints when standard output is not a terminal:
    `afpc fmt -` turned `\"\"\"\\x1b[1mBold\\x1b[0m\"\"\"` into `\"\"\"Bold\"\"\"`, a changed system
    prompt (and `--diff` lines that no longer matched the file)."""
    text = 'agent a {\n  system = """\x1b[1mBold\x1b[0m"""  # \x1b[31mred\x1b[0m\n}\n'
    res = cli("-", stdin=text.encode("utf-8"))
    assert res.exit_code == 0 and res.stdout == text, repr(res.stdout)


def test_a_diff_of_a_cr_only_file_or_odd_line_breaks_is_well_formed(tmp_path):
    """Lines are cut after `\\n` only, as `patch` reads them: `str.splitlines` also cut at `\\r`,
    U+2028 or a form feed, and put a bogus "No newline at end of file" after each piece."""
    cr = write(tmp_path / "cr.afp", 'agent a {\r  model="m"\r}\r')
    res = cli("--diff", cr)
    assert res.stdout.count("\\ No newline at end of file") == 1, res.stdout
    odd = write(tmp_path / "odd.afp", 'agent a {\n  model="m"  # a\u2028b\x0cc\n}\n')
    res = cli("--diff", odd)
    assert "\\ No newline" not in res.stdout and "# a\u2028b\x0cc" in res.stdout, res.stdout


def test_a_comment_loses_only_the_language_s_blanks_at_its_end():
    text = 'agent a {\n  model = "m"  # note\u3000\n}\n'
    assert cli("-", stdin=text.encode("utf-8")).stdout == text


def test_a_line_ending_in_on_status_note_or_by_is_continued():
    res = cli("-", stdin=b"graph g {\n  route a -> b on\n  t\n}\n")
    assert res.stdout == "graph g {\n  route a -> b on\n    t\n}\n", res.stdout
