"""`afpc test`'s reports: the pytest-like text, the one-line tally and JUnit XML.

Role:       draws `TestResult`s and `FileProblem`s from `testing.run_files`; nothing here runs.
Emits:      text for the terminal; JUnit XML (a `testsuite` of `testcase`s, each failure with
            the statement's `file:line`, each file that does not load as an `error` case).
Invariants: pure functions of their arguments; the only times are those the caller passes
            (`afpc test` measures them with its clock; the results themselves hold none).
"""
from __future__ import annotations

import re
from typing import Mapping
from xml.sax import saxutils

from .testing import FileProblem, TestResult


def report(results: list[TestResult], problems: list[FileProblem], *, with_summary: bool = True
           ) -> str:
    """One line per test, then the failures and file errors, then (`with_summary`) the tally."""
    lines = [f"{r.id} {'PASSED' if r.passed else 'FAILED'}" for r in results]
    failed = [r for r in results if not r.passed]
    if failed or problems:
        lines.append("")
        lines.append("=" * 30 + " FAILURES " + "=" * 30)
    for p in problems:
        lines += [f"___ {p.file} ___", "  cannot load; its errors (`afpc check` draws them):"]
        lines += [f"    {x}" for x in p.message.splitlines()]
    for r in failed:
        lines.append(f"___ {r.id} ___")
        if r.error:
            lines.append(f"  {r.error}")
        lines += [f"  {x}" for x in r.failures]
    if with_summary:
        lines += ["", summary(results, problems)]
    return "\n".join(lines)


def summary(results: list[TestResult], problems: list[FileProblem]) -> str:
    """`N passed, M failed[, K file errors]`, or `no tests ran`."""
    failed = sum(1 for r in results if not r.passed)
    text = f"{len(results) - failed} passed, {failed} failed"
    if problems:
        text += f", {len(problems)} file error{'s' if len(problems) != 1 else ''}"
    return text if results or problems else "no tests ran"


# Characters XML 1.0 does not allow in a document, even as references: a file name or a message
# holding one (a control character, a lone surrogate) would make the whole report unreadable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(text: str) -> str:
    """`text` with each character XML cannot hold written as its Python escape (`\\x01`)."""
    return _NOT_XML.sub(lambda m: repr(m.group(0))[1:-1], text)


def _text(text: str) -> str:
    return saxutils.escape(_visible(text))


def _attr(text: str) -> str:
    return saxutils.quoteattr(_visible(text))


def junit(results: list[TestResult], problems: list[FileProblem],
          seconds: Mapping[str, float] | None = None) -> str:
    """JUnit XML; `seconds` (test id -> duration), when given, fills the `time` attributes of
    the cases it names and of the suite (their sum)."""
    failed = sum(1 for r in results if not r.passed)
    total = "" if seconds is None else f' time="{sum(seconds.values()):.3f}"'
    out = ['<?xml version="1.0" encoding="utf-8"?>',
           f'<testsuite name="afpc" tests="{len(results) + len(problems)}" failures="{failed}" '
           f'errors="{len(problems)}"{total}>']
    for r in results:
        took = seconds.get(r.id) if seconds is not None else None
        time = "" if took is None else f' time="{took:.3f}"'
        out.append(f"  <testcase classname={_attr(r.file)} name={_attr(r.name)}{time}>")
        if not r.passed:
            body = "\n".join(([r.error] if r.error else []) + list(r.failures))
            first = next(iter((r.error or (r.failures[0] if r.failures else "")).splitlines()),
                         "failed")
            out.append(f"    <failure message={_attr(first)}>{_text(body)}</failure>")
        out.append("  </testcase>")
    for p in problems:
        out.append(f"  <testcase classname={_attr(p.file)} name=\"load\">")
        out.append(f"    <error message={_attr(p.message.splitlines()[0] if p.message else 'error')}>"
                   f"{_text(p.message)}</error>")
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"
