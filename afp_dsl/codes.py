"""The one registry of diagnostic codes: `AFPnnn`, kebab name, default severity, summary, explanation.

Role:       consulted by every check, by `render` (names, SARIF rules) and by `afpc explain`.
Invariants: codes are stable; the hundreds digit is the phase (0 syntax, 1 names/imports,
            2 graph, 3 schemas/expressions, 4 policies/redaction/tests, 5 run time).
"""
from __future__ import annotations

from .diagnostics import Diagnostic, Label, Severity
from .record import Record, record
from .source import Span

E, W = Severity.ERROR, Severity.WARNING


@record
class Code(Record):
    id: str
    name: str
    severity: Severity
    summary: str
    explanation: str


def _c(id: str, name: str, sev: Severity, summary: str, explanation: str) -> Code:
    return Code(id, name, sev, summary, explanation.strip())


_ALL = [
    _c("AFP001", "syntax-error", E, "the text does not follow the grammar",
       "The parser met a token it did not expect. The message names what was found and what\n"
       "could stand there instead.\n\nFix: correct the text at the caret; common mistakes (a missing `}`,\n"
       "`=>` written for `->`, a missing `=` after an attribute key) get their own hint."),
    _c("AFP002", "unterminated-string", E, "a string literal is not closed",
       "A `\"` string must end on the same line; a `\"\"\"` string must be closed by `\"\"\"`.\n\n"
       "Fix: add the closing quote, or use a triple-quoted string for text that spans lines."),
    _c("AFP003", "reserved-word", E, "a reserved word is used as a name",
       "Reserved words (`agent`, `route`, `when`, `model`, ...) cannot name declarations or aliases.\n"
       "They stay usable as attribute keys, map keys, schema field names and path segments.\n\n"
       "Example: `skill route { ... }`\n\nFix: choose another name, such as `routing`."),
    _c("AFP004", "invalid-regex", E, "a regular expression does not compile",
       "Regex literals `/.../flags` use Python `re` syntax and are compiled by the checker.\n"
       "Flags are `i`, `m`, `s` and `x`. A pattern Python compiles with a FutureWarning (`[[`\n"
       "opening a class, or `--`, `&&`, `~~`, `||` inside one: a later Python may read them as a\n"
       "nested set or a set operation) is AFP004 as a warning.\n\n"
       "Fix: correct the pattern; escape `/` as `\\/`, and a literal `[`, `-`, `&`, `~` or `|`\n"
       "inside a class with a backslash."),
    _c("AFP005", "invalid-string", E, "a string literal has an invalid escape or character",
       "Strings use JSON escapes (`\\n`, `\\t`, `\\\"`, `\\\\`, `\\uXXXX`), and hold no raw control "
       "characters (a tab, U+0000 to U+001F): the diagnostic points at the first fault.\n\n"
       "Fix: escape a backslash as `\\\\`; write a control character as its escape (`\\t`, "
       "`\\u001b`)."),
    _c("AFP006", "invalid-input", E, "the file cannot be read as UTF-8 text",
       "A spec must be UTF-8 text. Binary files, invalid UTF-8 and NUL bytes are rejected.\n"
       "From Python, `afp.check` and `afp.load` report with this code, too, what names\n"
       "nothing to check: a folder, empty text, or an argument that is neither a path (a `str`\n"
       "or `os.PathLike`) nor spec text (`None`, `bytes`, a number).\n\n"
       "Fix: save the file as UTF-8, or remove it from the checked folder; from Python, pass\n"
       "the path of a `.afp` file or the spec's text as a `str`."),
    _c("AFP007", "nesting-too-deep", E, "lists, maps or expressions are nested too deeply",
       "The checker refuses nesting deeper than 200 levels rather than exhausting the stack.\n\n"
       "Fix: flatten the value, or move large data to `file(\"data.json\")`."),
    _c("AFP008", "number-out-of-range", E, "a number literal is too large to represent",
       "Numbers are JSON numbers stored as 64-bit floats or integers; `1e999` has no finite value.\n\n"
       "Fix: write a smaller number."),
    _c("AFP009", "bidi-control", W, "an invisible character reorders how the text is displayed",
       "The spec holds a bidirectional control character (U+202A to U+202E, U+2066 to U+2069).\n"
       "Editors and review tools display the text around it reordered, so a spec can read\n"
       "differently from how it is parsed (\"Trojan Source\", CVE-2021-42574): a guard that\n"
       "looks like `args.role == \"user\"` may compare something else, a comment may seem to\n"
       "end where it does not. It is reported wherever it appears: in a string, a comment or\n"
       "between tokens.\n\n"
       "Fix: delete the character; where a string really needs it, write it as an escape\n"
       "(`\"\\u202e\"`), which is visible."),
    _c("AFP101", "unknown-name", E, "a reference names nothing that is declared",
       "Every reference must name a declaration of this module, or `alias.name` of an imported one\n"
       "(a policy block may also name a built-in tool: `before read_skill`, `after skip_step`).\n"
       "A name declared nowhere is reported once, at its first use; its other uses are labels.\n\n"
       "Example: `tools = [lookup_ordr]`\n\nFix: correct the name (the message suggests close ones) or declare it."),
    _c("AFP102", "wrong-kind", E, "a reference names a declaration of the wrong kind",
       "Each position expects one kind: `tools = [...]` takes tools, `graph = ...` a graph, `context`\n"
       "steering, facts and instructions.\n\nFix: reference a declaration of the expected kind."),
    _c("AFP103", "duplicate-name", E, "two declarations share a name: in one module, or as the model sees them",
       "Names live in one namespace per module, whatever their kinds; an import's alias is one\n"
       "of them, and an alias used twice is reported too.\n\n"
       "The model sees bare names, so what one agent offers must not share one either: two\n"
       "different tools (baseline or of its skills) with one name, two different skills (open or\n"
       "of its graph) with one id, or a tool named like a built-in the agent offers (`read_skill`\n"
       "with skills, `skip_step` with `steps`). One declaration reached twice is no clash.\n\n"
       "Example: `agent a { tools = [lookup, lib.lookup] }`\n\nFix: rename one of them."),
    _c("AFP104", "unknown-attribute", E, "an attribute is not defined for this declaration kind",
       "Each declaration kind has a fixed set of attributes (see docs/language.md).\n\n"
       "Fix: correct the key (the message suggests close ones) or remove it."),
    _c("AFP105", "missing-attribute", E, "a required attribute is missing",
       "Tools and skills need a `description`; steering and instructions a `prompt`; facts `data`.\n\n"
       "Fix: add the attribute."),
    _c("AFP106", "bad-attribute-value", E, "an attribute's value has the wrong type or is out of range",
       "Example: `max_iterations = 0` (must be an integer of at least 1).\n\n"
       "As a warning: an attribute that has no effect where it is written, or a name listed twice\n"
       "in one list (`tools = [t, t]`).\n\nFix: give a value of the expected type; remove the repeat."),
    _c("AFP107", "import-not-found", E, "an imported module does not exist",
       "`import \"std/NAME\"` loads a standard-library module; any other path is relative to the\n"
       "importing file.\n\nFix: correct the path; standard modules are listed in docs/stdlib.md."),
    _c("AFP108", "import-cycle", E, "modules import each other in a cycle",
       "Imports must be acyclic. The message names every file on the cycle.\n\n"
       "Fix: move the shared declarations into a module both can import."),
    _c("AFP109", "file-not-found", E, "a spec path, or a `file(...)`, names a file that cannot be read",
       "A spec path given to `afpc check` or `afp.check` is relative to the current folder;\n"
       "`file(\"path\")` is relative to the spec that names it and must stay in its folder: an\n"
       "absolute path, or one whose `..` climb out of the folder, is refused unread. A `.json`\n"
       "data file that is not JSON is reported here too, with the line and column where it\n"
       "breaks (a schema file that is not JSON is AFP301 invalid-schema).\n\n"
       "Fix: correct the path or create the file; move a file from outside the spec's folder\n"
       "next to the spec."),
    _c("AFP110", "name-too-long", E, "a name is longer than 64 characters",
       "Names are also what the model sees (tool names, skill ids), so they must match\n"
       "`^[a-zA-Z0-9_-]{1,64}$`.\n\nFix: shorten the name."),
    _c("AFP111", "ambiguous-agent", E, "which agent is meant cannot be decided",
       "A test without `agent = ...` needs its module to declare exactly one agent.\n\n"
       "Fix: add `agent = NAME` to the test."),
    _c("AFP201", "no-entry", E, "a graph has no entry",
       "A run starts at an entry; a graph without one can never activate a skill by itself.\n\n"
       "Fix: add `entry SKILL` or `entry SKILL when EXPR`."),
    _c("AFP202", "unreachable-skill", W, "no path from an entry reaches a skill",
       "No entry reaches the skill over any route, deterministic or bare (a bare route still lets\n"
       "`read_skill` move the cursor there). A skill reached only when a bare route is taken is\n"
       "reported as `model-edge-only` instead.\n\n"
       "Fix: add an entry or a route into the skill, or remove it."),
    _c("AFP203", "model-edge-only", W, "a skill can only be entered when the model picks it",
       "The only edges into the skill are bare routes, which fire only through `read_skill`.\n"
       "A note gives a witness path from an entry (`a path in: entry a → b on t → c (bare\n"
       "route: when the model picks it)`).\n\n"
       "Fix: add a deterministic route if the skill must be reached by itself."),
    _c("AFP204", "dead-entry", W, "an entry can never be where a run starts",
       "Entries are tried in order and the first unconditional one always fires, so a conditional\n"
       "entry after it never starts a run. (A later unconditional entry is not dead: it is a\n"
       "persistent base, active every iteration.)\n\n"
       "Fix: move the entry before the unconditional one, or give it a route in."),
    _c("AFP205", "ambiguous-routes", W, "two routes can fire on the same result; order decides",
       "When two deterministic edges from one skill can hold for one tool result, the first in\n"
       "declaration order wins. A route that repeats an earlier one (same target, trigger and\n"
       "guard) never fires, for the same reason.\n\n"
       "Fix: make the guards disjoint (until then the route declared first wins); delete a\n"
       "repeated route."),
    _c("AFP206", "self-loop", W, "a route goes from a skill to itself",
       "A self-loop never moves the cursor; it only resets the skill's steps.\n\nFix: remove the route."),
    _c("AFP207", "no-way-out", W, "a cycle of skills has no edge leaving it and no way to answer",
       "Once the cursor enters the cycle it can never leave it, and no skill in it can end a run.\n"
       "A note gives a witness path from an entry into the cycle (`the cursor gets in by: entry\n"
       "a → b on t`).\n\n"
       "Fix: add a route out of the cycle."),
    _c("AFP208", "guard-unsatisfiable", E, "a guard can never hold",
       "Every disjunct of the guard is provably contradictory (crossed bounds, two different\n"
       "literals, a value outside an enum).\n\nFix: correct the guard."),
    _c("AFP209", "route-tool-not-in-skill", E, "a route waits for a tool its source skill cannot call",
       "An `on TOOL` route fires when TOOL returns while the source is current; the tool must be\n"
       "one of the source skill's tools, a baseline tool, an open skill's tool, or a tool of a\n"
       "persistent base (an unconditional entry, active every iteration). A route without `on`\n"
       "hears only the source skill's own tools: out of a skill with no tools it never fires (a\n"
       "warning; the model can still move the cursor along it with `read_skill`).\n\n"
       "Fix: add the tool to the skill."),
    _c("AFP210", "overlapping-guards", W, "two routes on one trigger can both hold",
       "Declaration order decides which fires.\n\nFix: make the guards disjoint."),
    _c("AFP211", "step-tool-not-in-skill", E, "a step names a tool the skill does not have",
       "Every step's tool must be one of the skill's `tools`.\n\nFix: add it to `tools`."),
    _c("AFP212", "skill-in-two-places", W, "a skill is both open and in the graph",
       "An open skill (agent `skills`) never moves the cursor, so its place in the graph is confusing.\n\n"
       "Fix: keep it in one place."),
    _c("AFP213", "agent-tool-cycle", E, "an agent reaches itself through agent-backed tools",
       "`impl = agent(NAME)` runs another agent; a cycle would never end.\n\nFix: break the cycle."),
    _c("AFP214", "body-foreign-tool", W, "a skill's body names a tool of another skill",
       "A skill's body is what the model reads while the skill is active; with\n"
       "`tool_scope = \"active\"`, a tool it names that belongs to another skill (and is no\n"
       "baseline tool, nor a persistent base's) is not offered then, so the model is told to\n"
       "use a tool it does not have. A name counts as a whole word.\n\n"
       "Fix: add the tool to the skill's `tools`, or reword the body."),
    _c("AFP215", "body-unknown-tool", W, "a skill's body calls a tool that does not exist",
       "A `snake_case(` call written in a skill's body (the original framework's pattern\n"
       "`\\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\\s*\\(`) names no declared tool or built-in.\n\n"
       "Fix: name a declared tool (the message suggests a close one), or write the step without\n"
       "call syntax."),
    _c("AFP301", "invalid-schema", E, "a schema is not valid JSON Schema 2020-12",
       "Schema blocks, raw maps and schema files are validated against the 2020-12 metaschema (a\n"
       "schema file must first be JSON: the message names the file, the line and the column);\n"
       "schema-block constraints must fit their type and leave some value (`min: 5, max: 1`, or\n"
       "`exclusive_min: 1, exclusive_max: 2` on an integer, leaves none: no call or result could\n"
       "ever be valid). Every `$ref` must resolve within the schema\n"
       "itself (`#/$defs/NAME`, an `$anchor`, or a sub-schema's `$id`): nothing is fetched, so a\n"
       "dangling or remote reference would leave the tool's arguments uncheckable at run time.\n"
       "A warning: a `format` that is a near miss of one JSON Schema defines (`\"emial\"`).\n\n"
       "Fix: correct the schema; copy a referenced schema under `$defs`."),
    _c("AFP302", "default-violates-schema", E, "a default value does not satisfy its own schema",
       "Example: `days: integer(min: 1) = 0`. Also the value of `impl = returns(VALUE)`, which\n"
       "is the tool's result on every call, when it does not satisfy the tool's own `output`\n"
       "schema.\n\nFix: change the default (or the returned value) or the constraint."),
    _c("AFP303", "unknown-root", E, "an expression uses a root not allowed in its place",
       "Each place allows certain roots (`message`, `args`, `result`, ...); see docs/language.md §6.\n\n"
       "Fix: use one of the roots listed in the message."),
    _c("AFP304", "unknown-field", E, "a path names a field the declared schema does not have",
       "The path reads a field its value cannot have, so it is always null: one the tool's\n"
       "schema does not declare in an object that allows no other fields, or a field of a\n"
       "string or number (`message.x`). Also in a policy `before` rule, which runs before\n"
       "argument validation: a call with such a field is then refused as invalid, so the rule\n"
       "can never match a valid call.\n\n"
       "Fix: correct the field name, or declare it in the tool's schema."),
    _c("AFP305", "type-mismatch", E, "a comparison can never be true",
       "The comparison is false whatever the run holds: an ordered comparison with a boolean,\n"
       "null or list; a literal of a type or value the field cannot have; two paths whose\n"
       "declared types cannot meet (`message < iteration`); a path compared with itself\n"
       "(`args.x < args.x`, `message != message`); `mentions` with no keyword, or with\n"
       "one that is not a non-empty string. A regex literal anywhere but after\n"
       "`matches` is reported too: it is not a value, so the condition cannot be evaluated.\n\n"
       "Fix: compare values of the same type; test a pattern with `matches`."),
    _c("AFP306", "status-not-in-vocabulary", E, "an unknown status name",
       "Statuses are success, failure, denied, invalid, partial, pending, absent.\n\nFix: use one of them."),
    _c("AFP307", "regex-backtracking", W, "a regular expression may backtrack exponentially",
       "A repeat over a group that can match one text in more than one way (a nested repeat such\n"
       "as `(a+)+`, or alternatives that start alike such as `(a|aa)+`) makes Python's regex\n"
       "engine try exponentially many ways on a text that almost matches. So that a run never\n"
       "stalls, such a pattern is searched at run time only on a text short enough for its\n"
       "worst case to stay within budget (a few characters): on a longer one the condition\n"
       "cannot be evaluated, which fails closed (a route or `when` does not hold, a policy rule\n"
       "denies, a `check_in` pauses, each with the reason), and a redact pattern redacts the\n"
       "whole text.\n"
       "The checker does not run such a pattern on the spec's values either, so conditions\n"
       "using it are not analysed. The test is conservative: it may flag a pattern that is in\n"
       "fact safe, never the reverse.\n\n"
       "Fix: match each character one way: `/^(a|aa)+$/` → `/^a+$/`, `/(\\w+\\s?)+$/` → `/[\\w\\s]+$/`."),
    _c("AFP308", "untyped-comparison", W, "an ordered comparison reads an argument of unknown type",
       "A tool's `check_in`, or a policy `before`/`after` rule on a named tool, compares an\n"
       "argument with `<`, `<=`, `>` or `>=` against a number (or a string), and the tool's\n"
       "input schema does not say what type the argument has (no `input`, a field typed `any`,\n"
       "or an undeclared field of an open object). Ordered comparisons need two numbers or two\n"
       "strings and convert nothing: `check_in = args.amount > 1000` is false when the model\n"
       "sends `\"amount\": \"5000\"`, so the run does not pause.\n\n"
       "Fix: declare the argument's type (`input { amount: number }`): the call is then\n"
       "validated, and a string is refused with a message the model can act on."),
    _c("AFP309", "unknown-schema-keyword", W, "a raw JSON Schema uses a word close to a keyword it is not",
       "A raw JSON Schema map or schema file (`output = { ... }`, `input = file(\"x.json\")`) holds\n"
       "a key that is not a keyword of JSON Schema 2020-12 but is spelt like one (`propenties`,\n"
       "`require`, `minLenght`). The validator ignores a word it does not know, so the rule the\n"
       "key was meant to state is not checked: fields are not typed, nothing is required, and\n"
       "guards reading those fields are not typed either. A key far from every keyword (a\n"
       "custom annotation such as `x-note`) is not reported, unless no key of the schema is a\n"
       "keyword (`input = { a: \"string\" }`): such a schema accepts any value.\n\n"
       "Fix: spell the keyword as the help says, or rename an annotation away from it; for\n"
       "a schema block, drop the `=`: `input { a: string }`."),
    _c("AFP401", "policy-rule-never-matches", W, "a policy rule can never match",
       "A block for a tool no agent using the policy has, a rule whose condition can never hold,\n"
       "or a rule that can hold only where earlier rules of its block hold (the first rule that\n"
       "holds decides).\n\nFix: correct the tool name or the condition, or reorder the rules."),
    _c("AFP402", "ask-outside-before", E, "`ask` is used outside a `before` block",
       "Only a `before` block can pause for a person; `input`, `after` and `output` cannot.\n\n"
       "Fix: use `deny`, or move the rule to `before`."),
    _c("AFP403", "redact-pattern-too-broad", E, "a redaction pattern matches the empty string",
       "Such a pattern would redact everything (or nothing visible).\n\nFix: require at least one character."),
    _c("AFP404", "test-unknown-tool", E, "a test names a tool the agent does not have",
       "Fix: correct the tool name."),
    _c("AFP405", "test-args-invalid", W, "a scripted tool call's arguments violate the input schema",
       "The test still runs; this warns in case the invalid call is not deliberate. The notes\n"
       "say what the schema expected where (`seats: expected a number >= 1`), as the model is\n"
       "told at run time, never the values: a test's arguments may hold a secret.\n\n"
       "Fix: correct the scripted arguments; a test that sends invalid ones on purpose (to see\n"
       "how the agent copes) keeps the warning, which fails `afpc check` only with `--strict`."),
    _c("AFP406", "test-unknown-edge", E, "`expect route` names an edge that does not exist",
       "Also `expect cursor` naming a skill outside the agent's graph: the cursor\n"
       "moves only to the graph's skills, never to an open skill.\n\n"
       "Fix: name an edge (or a skill) of the agent's graph."),
    _c("AFP407", "does-nothing", W, "a policy or redact rule is empty",
       "A policy with no rules and no `impl` allows everything; a redact rule with no `keys`\n"
       "and no `patterns` selects nothing, so nothing the agent records is scrubbed by it.\n"
       "Either is most likely unfinished.\n\n"
       "Fix: add rules (or `impl`), `keys` or `patterns`; or remove the declaration."),
    _c("AFP501", "tool-not-bound", E, "a tool has no body at run time",
       "The tool has no `impl`, no binding from the host, and no test stub, or its\n"
       "`python(\"module:attr\")` target cannot be imported.\n\nFix: install the module or bind the tool."),
    _c("AFP502", "provider-error", E, "the model provider failed",
       "Fix: follow the message (set the API key, start the server, pull the model)."),
]

REGISTRY: dict[str, Code] = {c.id: c for c in _ALL}
BY_NAME: dict[str, Code] = {c.name: c for c in _ALL}


def lookup(code_or_name: str) -> Code | None:
    """Find a code by `AFP101`, `afp101` or its name `unknown-name`."""
    key = code_or_name.strip()
    return REGISTRY.get(key.upper()) or BY_NAME.get(key.lower())


def diag(code: str, message: str, span: Span | None, label: str = "", *,
         notes: tuple[str, ...] | list[str] = (), help: str | None = None,
         secondary: tuple[Label, ...] = (), severity: Severity | None = None) -> Diagnostic:
    """Build a diagnostic for a registered code (by id or name) at its default severity."""
    c = lookup(code)
    if c is None:
        raise KeyError(f"unregistered diagnostic code {code!r}")
    labels = ((Label(span, label, True),) if span is not None else ()) + tuple(secondary)
    return Diagnostic(c.id, severity or c.severity, message, labels, tuple(notes), help)
