"""Files → `Program`: read, parse and lower the root module and everything it imports.

Role:       the only front-end stage that touches the file system (spec files, `file(...)`,
            the standard library).
Emits:      AFP006 invalid-input, AFP109 file-not-found (a spec path naming nothing), AFP103
            duplicate-name (aliases), AFP107 import-not-found, AFP108 import-cycle, plus what
            `parser` and `lower` emit.
Invariants: never raises for bad input; reads only regular files within `MAX_BYTES` (a FIFO
            or a device is refused unopened); each module is loaded once; module keys are display
            paths (relative to the working directory when possible, `std/NAME.afp` for the stdlib).
"""
from __future__ import annotations

import os
import stat
from collections.abc import Generator, Iterator

from . import ir, paths, resources
from .codes import diag
from .diagnostics import Diagnostic, Label
from .lower import lower_module
from .parser import parse
from .paths import real_path  # noqa: F401 - (also `loader.real_path`)
from .record import Record, record
from .source import SourceFile, Span
from .spec_files import Unreadable
from .suggest import closest

MAX_BYTES = 16 * 1024 * 1024


def display_key(path: str | os.PathLike) -> str:
    """A stable display path: relative to the working directory when below it, else absolute."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive on Windows
        rel = paths.plain(path)
    if rel.startswith(".."):
        rel = paths.plain(path)
    return paths.posix(rel)


def not_a_file(path: str | os.PathLike) -> str | None:
    """Why `path` cannot be a spec file (missing, a folder, a FIFO or a device), or None. Looks
    only at the file's kind: never opens it, so a FIFO cannot block and a device cannot stream."""
    try:
        mode = os.stat(paths.plain(path)).st_mode
    except FileNotFoundError:
        return "no such file"
    except RuntimeError:
        return "it is a symbolic link that loops"
    except (OSError, ValueError) as e:
        return getattr(e, "strerror", None) or str(e)
    if stat.S_ISDIR(mode):
        return "it is a folder"
    if not stat.S_ISREG(mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket or special file")
        return f"it is {kind}, not a regular file; save the spec to a file and pass that"
    return None


def read_text(path: str | os.PathLike) -> tuple[str | None, str | None]:
    """(text, None) or (None, reason). Reads regular files only (a FIFO would block, a device
    like `/dev/zero` never ends), and only when their size is within `MAX_BYTES`."""
    path = paths.plain(path)
    reason = not_a_file(path)
    if reason is not None:
        return None, reason
    try:
        size = os.stat(path).st_size
        if size > MAX_BYTES:
            return None, _too_large(size)
        data = read_bytes(path)
    except FileNotFoundError:
        return None, "no such file"
    except OSError as e:
        return None, e.strerror or str(e)
    if len(data) > MAX_BYTES:  # it grew while read
        return None, _too_large(len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"it is not UTF-8 text (byte {e.start})"
    return text.removeprefix("\ufeff"), None


def read_bytes(path: str) -> bytes:
    """`Path(path).read_bytes()`."""
    with open(path, "rb") as f:
        return f.read()


def _too_large(size: int) -> str:
    """One unit on both sides, and the bytes, so a file just over the limit reads as over it."""
    return (f"it is {size:,} bytes ({size / 2**20:.1f} MiB); specs are limited to "
            f"{MAX_BYTES // 2**20} MiB ({MAX_BYTES:,} bytes)")


class Loader:
    def __init__(self) -> None:
        self.modules: dict[str, ir.Module] = {}
        self.order: list[str] = []
        self.diags: list[Diagnostic] = []
        self.stack: list[str] = []
        self.paths: dict[str, str | None] = {}
        self.unparsed: set[str] = set()

    def load_text(self, key: str, text: str, base: str | None) -> ir.Module:
        """Load a module and, depth first, every module it imports. Iterative: a module waiting
        for an import to load is a suspended `_module`, so a chain of imports thousands of
        modules long cannot exhaust Python's stack (before, 330 levels raised RecursionError)."""
        pending = [self._module(key, text, base)]
        while pending:
            child = next(pending[-1], None)
            if child is None:
                pending.pop()
            else:
                pending.append(self._module(*child))
        return self.modules[key]

    def _module(self, key: str, text: str, base: str | None) -> Iterator[tuple[str, str, str]]:
        """Parse and lower one module, yielding each import to load first as (key, text,
        folder); the module is stored once its imports are resolved."""
        self.paths[key] = base
        self.stack.append(key)
        src = SourceFile.of(key, text)
        parsed = parse(src)
        self.diags.extend(parsed.diagnostics)
        module, diags = None, []
        if parsed.tree is not None:
            module, diags = lower_module(parsed.tree, key, text, self.file_reader(base), parsed.comments)
            self.diags.extend(diags)
        if module is None:
            self.unparsed.add(key)
            module = ir.Module(key=key, source=text, comments=parsed.comments)
        imports = yield from self.resolve_imports(module, base, _bad_paths(module, diags))
        self.stack.pop()
        self.modules[key] = ir.Module(key=module.key, imports=imports, decls=module.decls,
                                      comments=module.comments, source=module.source)
        self.order.append(key)

    def file_reader(self, base: str | None):
        def read(rel: str) -> str | None:
            folder = base if base is not None else paths.plain(os.getcwd())
            text, reason = read_text(paths.join(folder, rel))
            return text if text is not None else Unreadable(reason or "cannot be read")
        return read

    # -------------------------------------------------------------- imports
    def resolve_imports(self, module: ir.Module, base: str | None, bad: frozenset[Span] = frozenset()
                        ) -> Generator[tuple[str, str, str], None, tuple[ir.Import, ...]]:
        """The module's imports, each resolved to the key of the module it loads ("" when it
        cannot be: a diagnostic says why). `bad`: the spans of path strings that do not decode
        (AFP005), which name no module to look for (one root cause, one diagnostic)."""
        imports = []
        aliases: dict[str, ir.Import] = {}
        for imp in module.imports:
            if imp.alias in aliases:
                self.diags.append(diag("AFP103", f"the alias `{imp.alias}` is used twice", imp.alias_span,
                                       "used again here",
                                       secondary=(Label(aliases[imp.alias].alias_span, "first used here",
                                                        False),)))
                continue
            key, to_load = self.load_import(imp, base) if imp.span not in bad else (None, None)
            if to_load is not None:
                yield to_load
            resolved = ir.Import(path=imp.path, alias=imp.alias, module=key or "", span=imp.span,
                                 alias_span=imp.alias_span)
            aliases[imp.alias] = resolved
            imports.append(resolved)
        return tuple(imports)

    def load_import(self, imp: ir.Import, base: str | None
                    ) -> tuple[str | None, tuple[str, str, str] | None]:
        """The key of the module `imp` names (None after a diagnostic saying why), and, when
        that module is not loaded yet, what to load: (key, text, folder)."""
        target = self.locate(imp, base)
        if target is None:
            return None, None
        key, path = target
        if key in self.stack:
            cycle = self.stack[self.stack.index(key):] + [key]
            pairs = [f"`{a}` imports `{b}`" for a, b in zip(cycle, cycle[1:])]
            self.diags.append(diag("AFP108", "import cycle: " + " → ".join(_elided(
                                   [f"`{k}`" for k in cycle])),
                                   imp.span, "this import closes the cycle", notes=tuple(_elided(pairs)),
                                   help="move what the modules share into a module that both import"))
            return None, None
        if key in self.modules:
            return key, None
        text, reason = read_text(path)
        if text is None:
            self.diags.append(diag("AFP107", f"cannot read imported module `{imp.path}`: {reason}", imp.span,
                                   "cannot be read"))
            return None, None
        return key, (key, text, paths.parent(path))

    def locate(self, imp: ir.Import, base: str | None) -> tuple[str, str] | None:
        if imp.path.startswith("std/"):
            name = imp.path[4:].removesuffix(".afp")
            path = resources.stdlib_path(name)
            if path.is_file():
                return f"std/{name}.afp", paths.plain(path)
            names = resources.stdlib_names()
            close = closest(name, names)
            self.diags.append(diag(
                "AFP107", f"no standard-library module `{imp.path}`", imp.span, "not in the standard library",
                help=f'did you mean `"std/{close}"`?' if close else
                "standard modules: " + ", ".join(f"`std/{n}`" for n in names)))
            return None
        if not imp.path:  # (else it names the importing file's own folder)
            self.diags.append(diag("AFP107", "the import path is empty", imp.span, "names no module",
                                   help="name a module: `std/NAME`, or a path relative to this "
                                        "file's folder, as `\"./common.afp\"`"))
            return None
        if paths.is_absolute(imp.path):  # language §4: `std/NAME` or relative to the file
            self.diags.append(diag("AFP107", f"cannot import `{imp.path}`: an import path is "
                                   "`std/NAME` or a path relative to the importing file",
                                   imp.span, "absolute path",
                                   help="write it relative to this file's folder, as "
                                        "`\"./common.afp\"`"))
            return None
        folder = base if base is not None else paths.plain(os.getcwd())
        path = real_path(paths.join(folder, imp.path))
        if not paths.is_file(path):
            alt = paths.with_suffix(path, ".afp") if paths.suffix(path) != ".afp" else None
            if alt is not None and paths.is_file(alt):
                path = alt
            elif os.path.lexists(path) and not_a_file(path) != "no such file":
                reason = str(not_a_file(path)).split(";")[0]  # there, but a folder, a pipe...
                self.diags.append(diag("AFP107", f"cannot import `{imp.path}`: {reason}", imp.span,
                                       "not a readable file",
                                       help="import a `.afp` module file"))
                return None
            else:
                self.diags.append(diag("AFP107", f"imported module `{imp.path}` not found", imp.span,
                                       "no such file", notes=(f"looked for `{display_key(path)}`",),
                                       help="relative imports are resolved from the importing file's folder"))
                return None
        if paths.suffix(path) != ".afp":  # (a Markdown or JSON file would be parsed as a module)
            self.diags.append(diag("AFP107", f"cannot import `{imp.path}`: modules are `.afp` "
                                   "files", imp.span, "not a `.afp` file",
                                   help="import the spec module; read data with `file(...)`"))
            return None
        return display_key(path), path


@record
class LoadResult(Record):
    program: ir.Program | None
    diagnostics: list[Diagnostic]
    unparsed: frozenset[str]  # modules that failed to parse (later checks would only cascade)


def _bad_paths(module: ir.Module, diags: list[Diagnostic]) -> frozenset[Span]:
    """The spans of the module's import paths that hold an invalid string (AFP005)."""
    faults = [d.primary.span for d in diags if d.code == "AFP005" and d.primary is not None]
    return frozenset(imp.span for imp in module.imports if any(
        imp.span.start <= f.start and f.end <= imp.span.end for f in faults))


def load(path: str | os.PathLike | None = None, *, text: str | None = None,
         name: str = "<text>") -> LoadResult:
    """Load a spec from a file (or from `text`), with all its imports."""
    loader = Loader()
    if text is not None:
        key, base = name, (paths.parent(paths.plain(path)) if path is not None else None)
    else:
        if path is None:
            raise TypeError("load needs a path or text")
        p = paths.plain(path)
        key = display_key(real_path(p))
        text, reason = read_text(p)
        if text is None:
            if os.path.islink(p) and not os.path.exists(p):  # (named as the link, not its target)
                key = display_key(os.path.join(real_path(paths.parent(p)), os.path.basename(p)))
                reason = (f"it is a symbolic link to `{os.readlink(p)}`, which does not exist"
                          if reason == "no such file" else f"it is a symbolic link: {reason}")
            return LoadResult(None, [_unread(p, key, reason)], frozenset([key]))
        base = paths.parent(real_path(p))
    root = loader.load_text(key, text, base)
    keys = [root.key] + [k for k in loader.order if k != root.key]
    program = ir.Program(root=root.key, modules=tuple(loader.modules[k] for k in keys))
    return LoadResult(program, loader.diags, frozenset(loader.unparsed))


def _unread(path: str, key: str, reason: str | None) -> Diagnostic:
    """AFP109 file-not-found for a spec path that names nothing; AFP006 invalid-input for one
    that cannot be read as a spec (a folder, a FIFO, a symbolic link to nothing, binary or too
    large)."""
    if not os.path.lexists(path):
        return diag("AFP109", f"cannot read `{key}`: no such file", Span(key, 0, 0),
                    help=_missing_help(path))
    return diag("AFP006", f"cannot read `{key}`: {reason}", Span(key, 0, 0), help=unread_help(reason))


def _missing_help(path: str) -> str:
    """The fix for a spec path that names nothing: a spec beside it with a close name, else
    where the path is taken from (`-` is not standard input)."""
    if path == "-":
        return ("afpc does not read a spec from standard input: save it to a file and name "
                "the file")
    folder, name = os.path.split(path)
    try:  # (names compared without `.afp`, which every candidate shares)
        near = {n[:-4]: n for n in os.listdir(folder or ".") if n.endswith(".afp")}
    except (OSError, ValueError):  # (ValueError: a NUL in the name)
        near = {}
    close = closest(name.removesuffix(".afp"), sorted(near))
    if close is not None:
        return f"did you mean `{os.path.join(folder, near[close])}`?"
    return "check the path (it is taken relative to the current folder)"


def unread_help(reason: str | None) -> str | None:
    """The fix for a spec file that cannot be read, by the reason `read_text` gave."""
    text = reason or ""
    if text.startswith("it is not UTF-8"):
        return "save the file as UTF-8 (a spec is UTF-8 text; is it a binary file?)"
    if text.startswith("it is a folder"):
        return "name a `.afp` file (`afpc check` also takes a folder)"
    if "specs are limited" in text:
        return "split the spec into modules joined with `import`"
    if "symbolic link" in text:
        return "point the link at a spec file, or name the file itself"
    return None


def load_program(path: str | os.PathLike | None = None, *, text: str | None = None,
                 name: str = "<text>") -> tuple[ir.Program | None, list[Diagnostic]]:
    """(program, front-end diagnostics); the program is None only when the root cannot be read."""
    result = load(path, text=text, name=name)
    return result.program, result.diagnostics


def _elided(items: list[str], keep: int = 5) -> list[str]:
    """`items`, or its first and last `keep` around a line counting the rest (a cycle through
    thousands of modules stays readable)."""
    if len(items) <= 2 * keep + 1:
        return items
    return items[:keep] + [f"… {len(items) - 2 * keep} more …"] + items[-keep:]
