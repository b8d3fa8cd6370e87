"""Fuzz the front end for longer than the test suite does, with the same properties.

Targets (tests/test_properties.py holds the properties, tests/strategies.py the generators):
  roundtrip  generated IR → print_module → parse + lower gives the same IR, printing is idempotent
  mutate     mutated real specs never raise out of `afp_dsl.check`; spans stay in the file;
             every renderer accepts the result
  text       the same for arbitrary text
  fmt        mutated real specs, arbitrary text and reblanked specs: `format_source` formats or
             refuses with a diagnostic, keeps the tokens and the IR, and is idempotent
             (tests/test_fmt_properties.py)
  bytes      (atheris, optional) raw bytes decoded as UTF-8 with replacement, as `text`
Failing text inputs are saved to tests/corpus/ (replayed by tests/test_bad_input.py and, formatted,
by tests/test_fmt.py).
Not a test: `python bench/fuzz.py [roundtrip|mutate|text|fmt|all] [--examples N] [--seed S]
[--shrink]`; `python bench/fuzz.py bytes -- ATHERIS_ARGS` when atheris is installed.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

import test_properties as props  # noqa: E402
from bench.common import positive_int  # noqa: E402
from strategies import modules  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"


def save(text: str, target: str) -> Path:
    """Keep a failing input as a regression seed; the name is its content hash."""
    CORPUS.mkdir(exist_ok=True)
    path = CORPUS / f"{target}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}.afp"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


def text_property(target: str):
    def run(text: str) -> None:
        text = props.as_text(text)
        try:
            props.assert_checks_cleanly(text)
        except BaseException:
            print(f"failing input saved to {save(text, target)}", file=sys.stderr)
            raise
    return run


def fmt_property(text: str) -> None:
    import test_fmt_properties as fmt_props
    if isinstance(text, tuple):  # (a reblanked spec: the seed, then the messy one)
        text = text[1]
    text = props.as_text(text)
    try:
        fmt_props.assert_formatted_well(text)
    except BaseException:
        print(f"failing input saved to {save(text, 'fmt')}", file=sys.stderr)
        raise


def fmt_inputs():
    import test_fmt_properties as fmt_props
    from hypothesis import strategies as st
    return st.one_of(props.mutated_specs(), props.weird_text, fmt_props.reblanked_specs())


def build(target: str, examples: int, shrink: bool, seed_value: int | None):
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])
    conf = settings(max_examples=examples, deadline=None, phases=phases, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)
    if target == "roundtrip":
        test = given(modules())(lambda module: None if props.assert_round_trip(module) else None)
    elif target == "fmt":
        test = given(fmt_inputs())(fmt_property)
    else:
        strategy = props.mutated_specs() if target == "mutate" else props.weird_text
        test = given(strategy)(text_property(target))
    test = conf(test)
    return seed(seed_value)(test) if seed_value is not None else test


def run_atheris(argv: list[str]) -> None:
    try:
        import atheris
    except ImportError:
        sys.exit("fuzz: atheris is not installed (pip install atheris); use the Hypothesis targets")
    check = text_property("bytes")

    def one(data: bytes) -> None:
        check(data.decode("utf-8", "replace"))

    atheris.Setup([sys.argv[0], *argv], one)
    atheris.Fuzz()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", nargs="?", default="all", choices=["roundtrip", "mutate", "text", "fmt", "all", "bytes"])
    ap.add_argument("--examples", type=positive_int, default=2000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--shrink", action="store_true", help="shrink failures (slow on large IR)")
    args, rest = ap.parse_known_args()
    if rest and args.target != "bytes":
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.target == "bytes":  # --examples/--seed become libFuzzer's -runs/-seed (else ignored)
        given = [a for a in rest if a != "--"]
        if not any(a.startswith("-runs=") for a in given):
            given.append(f"-runs={args.examples}")
        if args.seed is not None and not any(a.startswith("-seed=") for a in given):
            given.append(f"-seed={args.seed}")
        run_atheris(given)
        return
    targets = ["roundtrip", "mutate", "text", "fmt"] if args.target == "all" else [args.target]
    for target in targets:
        started = time.perf_counter()
        build(target, args.examples, args.shrink, args.seed)()
        took = time.perf_counter() - started
        print(f"{target:9} {args.examples} examples in {took:.1f} s ({args.examples / took:.0f}/s): ok")


if __name__ == "__main__":
    main()
