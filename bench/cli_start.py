"""Benchmark: cold `afpc check` of a 50-line spec as a whole process, against `python -c pass`.

Both commands run the same way (a fresh process each time, same interpreter, same environment);
the figure is the ratio of their median wall times. The package's bytecode is compiled first, as
`pip install` does (a checkout run with PYTHONDONTWRITEBYTECODE=1 would otherwise compile every
module on every start). For scale, the start-up of importing the libraries `afpc check` needs
(attrs alone; attrs and click; with jsonschema) is measured the same way, every command taking its
turn in each round. Also records the slowest imports of `afpc check` (`python -X importtime`),
which is where start-up time goes.
An interpreter's start-up includes whatever the `.pth` files of its site-packages run (`import`
lines: on this machine one of them imports `certifi` and `pathlib`, ≈ 30 ms, more than the rest
of `python -c pass`), and that cost lands in the baseline, shrinking the ratio. So both commands
are also run by an interpreter without them: a virtual environment whose site-packages holds one
`.pth` of plain path lines (the base site-packages folders and the project), which `site` adds to
`sys.path` without running the hooks in them. The goal reads the larger of the two ratios.
Run: `python -m bench.cli_start [--reps N] [--quick] [--json OUT]`.
"""
from __future__ import annotations

import compileall
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import parser, write_result  # noqa: E402

SPEC = '''# A small support agent: 50 lines, every kind of declaration the checker looks at.
agent support {
  system = "You help customers with orders."
  graph = flow
  policies = [limits]
}

tool lookup_order {
  description = "Find an order by its id."
  input { order_id: string(min_length: 3) "The order id" }
  output { status: "open" | "shipped" | "lost", total?: number }
}

tool refund {
  description = "Refund an order."
  input { order_id: string, amount: number(min: 0) }
}

skill triage {
  description = "Understand what the customer needs."
  body = "Ask for the order id, then look the order up."
  tools = [lookup_order]
}

skill refunds {
  description = "Refund lost orders."
  body = "Refund the order when it is lost."
  tools = [refund]
}

graph flow {
  entry triage
  route triage -> refunds on lookup_order when result.status == "lost"
}

policy limits {
  before refund {
    deny when args.amount > 500 because "Refunds over 500 need a person."
  }
}

test lost_order_is_refunded {
  agent = support
  user "My order A123 never arrived."
  model calls lookup_order {order_id: "A123"}
  tool lookup_order returns {status: "lost"}
  model calls refund {order_id: "A123", amount: 20}
  model says "Refunded."
  expect called refund 1
}
'''


def afpc_command() -> list[str]:
    """The installed `afpc` script next to this interpreter, else the same entry point via -c."""
    script = Path(sys.executable).with_name("afpc")
    if script.is_file():
        return [sys.executable, str(script)]
    found = shutil.which("afpc")
    if found and "shims" not in found:
        return [sys.executable, found]
    return [sys.executable, "-c", "import sys; from afp_dsl.cli import main; sys.argv[0] = 'afpc'; "
            "sys.exit(main())"]


def run_medians(cmds: dict[str, list[str]], reps: int, warmup: int, env: dict) -> dict:
    """Median and fastest wall time of each command, the commands taking turns (one run of each
    per round), so a load that drifts during the benchmark hits them all alike."""
    for _ in range(warmup):
        for cmd in cmds.values():
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(max(1, reps)):
        for name, cmd in cmds.items():
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
            times[name].append(time.perf_counter() - t0)
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return {name: {"median_s": statistics.median(t), "min_s": min(t), "reps": len(t)}
            for name, t in times.items()}


def slowest_imports(env: dict, top: int = 12) -> list[dict]:
    """The imports with the largest cumulative time when `afpc check` starts."""
    code = "import afp_dsl.cli"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env,
                          capture_output=True, text=True, check=False)
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append({"module": m.group(4), "cumulative_ms": int(m.group(2)) / 1000,
                         "depth": len(m.group(3)) // 2})
    rows = [r for r in rows if r["depth"] <= 2]
    return sorted(rows, key=lambda r: -r["cumulative_ms"])[:top]


LIBRARIES = {"import_attrs": "import attrs",
             "import_attrs_click": "import attrs, click",
             "import_attrs_click_jsonschema": "import attrs, click, jsonschema"}


def startup_hooks(folders: list[str] | None = None) -> list[str]:
    """The `.pth` files of this interpreter's site folders with lines `site` executes."""
    found = []
    for folder in _site_folders() if folders is None else folders:
        for pth in sorted(Path(folder).glob("*.pth")):
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            if any(line.startswith(("import ", "import\t")) for line in lines):
                found.append(pth.name)
    return found


def _site_folders() -> list[str]:
    import site
    folders = list(site.getsitepackages())
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    return [f for f in folders + ([user] if user else []) if Path(f).is_dir()]


def hook_free_python(where: Path) -> str:
    """An interpreter that starts like this one, without the site folders' start-up hooks: a
    virtual environment (no pip) whose one `.pth` lists the base site folders and the project."""
    import afp_dsl
    venv.create(where, with_pip=False, symlinks=True, system_site_packages=False)
    python = where / "bin" / "python"
    site_dir = next((where / "lib").glob("python*/site-packages"))
    paths = _site_folders() + [str(Path(afp_dsl.__file__).resolve().parent.parent)]
    (site_dir / "afp_bench_paths.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")
    return str(python)


def compile_package() -> None:
    """Write the package's bytecode, as installing it does."""
    import afp_dsl
    compileall.compile_dir(str(Path(afp_dsl.__file__).parent), quiet=1)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    reps = args.reps or (1 if args.quick else 15)
    warmup = 1 if args.quick else 2
    env = dict(os.environ)
    compile_package()
    with tempfile.TemporaryDirectory() as d:
        spec = Path(d) / "support.afp"
        spec.write_text(SPEC, encoding="utf-8")
        afpc = afpc_command() + ["check", str(spec)]
        clean = hook_free_python(Path(d) / "venv")
        cmds = {"bare": [sys.executable, "-c", "pass"], "check": afpc,
                "bare_no_hooks": [clean, "-c", "pass"], "check_no_hooks": [clean] + afpc[1:],
                **{k: [sys.executable, "-c", code] for k, code in LIBRARIES.items()},
                **{k + "_no_hooks": [clean, "-c", code] for k, code in LIBRARIES.items()}}
        times = run_medians(cmds, reps, warmup, env)
        bare, check = times.pop("bare"), times.pop("check")
        bare_clean, check_clean = times.pop("bare_no_hooks"), times.pop("check_no_hooks")
        libs = times
    ratio, ratio_clean = check["median_s"] / bare["median_s"], check_clean["median_s"] / bare_clean["median_s"]
    result = {"benchmark": "cli_start", "spec_lines": SPEC.count("\n"), "reps": reps,
              "command": ["afpc" if "afpc" in c else c for c in afpc_command()[1:]] + ["check", "SPEC"],
              "bytecode": "compiled", "python_c_pass": bare, "afpc_check": check,
              "ratio_as_started": ratio, "ratio": max(ratio, ratio_clean),
              "no_hooks": {"hooks": startup_hooks(), "python_c_pass": bare_clean,
                           "afpc_check": check_clean, "ratio": ratio_clean,
                           "libraries": {k: {**libs[k + "_no_hooks"], "code": code,
                                             "ratio": libs[k + "_no_hooks"]["median_s"] / bare_clean["median_s"]}
                                         for k, code in LIBRARIES.items()}},
              "libraries": {k: {**v, "code": LIBRARIES[k], "ratio": v["median_s"] / bare["median_s"]}
                            for k, v in libs.items() if k in LIBRARIES},
              "slowest_imports": slowest_imports(env)}
    write_result(args.json_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
