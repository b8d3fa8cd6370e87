// Parse Mermaid diagrams with Mermaid's own parser (used by tests/test_mermaid.py).
//
// Input: a JSON array of diagram texts on stdin, or file paths as arguments.
// Output: a JSON array of {"ok": true} | {"ok": false, "error": "..."} on stdout, one per diagram.
// jsdom provides window/document before mermaid is imported (DOMPurify needs them).
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
for (const name of ["Element", "HTMLElement", "Node", "DOMParser", "navigator"]) {
  if (!(name in globalThis)) {
    try { globalThis[name] = dom.window[name]; } catch { /* read-only in this Node */ }
  }
}

const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

const args = process.argv.slice(2);
const diagrams = args.length
  ? args.map((p) => readFileSync(p, "utf8"))
  : JSON.parse(readFileSync(0, "utf8"));

const results = [];
for (const text of diagrams) {
  try {
    await mermaid.parse(text);
    results.push({ ok: true });
  } catch (err) {
    results.push({ ok: false, error: String(err && err.message ? err.message : err) });
  }
}
process.stdout.write(JSON.stringify(results) + "\n");
