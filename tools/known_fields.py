"""Propose the known-fields registry (python/checkfu_fast/dialects/known/<dialect>.json).

Maintainer tool, not part of the package. It walks the given streams (default: the shipped
samples, the golden inputs, the real corpus and the 2026 examples), and for every record type
proposes the pointers it saw, under the policy of docs/audit.md:

* a pointer is known when every key on it (outside a free-form subtree) is read by the dialect
  module (a string literal in python/checkfu_fast/reference/dialects/<d>.py or its twin
  rust/dialects/<d>.rs), or named in the
  research notes about that CLI (a line under a heading that names the CLI, or naming it
  itself, in ../shared/spec/dialect-formats.md, formats-2026.md, dialects.md,
  docs/formats-2026.md or docs/session-files-2026.md), or in the vendor's public schema the
  dialect follows (EXTRA below); anything else stays unknown, so the audit reports it;
* a record type that the normalizer maps goes to ``records`` with a sample line; one that it
  maps to ``status/unknown`` today goes to ``documented`` (fields known for when it is mapped)
  when the notes name it, and nowhere otherwise.

The output is a proposal to review (``--write`` overwrites the files: keep the hand edits).
Run: PYTHONPATH=python python3 tools/known_fields.py [--write] [PATH...]
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import checkfu_fast  # noqa: E402
from checkfu_fast.audit import (  # noqa: E402
    KNOWN_DIR,
    Registry,
    _base_type,
    _escape,
    expand_paths,
    registry,
    unknown_fields,
)

DEFAULT = ["vectors/samples", "vectors/events", "../shared/corpus/real", "docs/examples-2026"]
DOCS = [
    "../shared/spec/dialect-formats.md",
    "../shared/spec/formats-2026.md",
    "../shared/spec/dialects.md",
    "docs/formats-2026.md",
    "docs/session-files-2026.md",
]
CODED = ("claude", "codex", "cursor", "grok", "opencode", "pi")
# (regex, replacement) applied to each seen pointer: map keys become `*`, free-form subtrees `/**`
RULES: dict[str, list[tuple[str, str]]] = {
    "claude": [
        (r"^/modelUsage/[^/]+", "/modelUsage/*"),
        (r"^(/message/content/\*/(input|content))/.*", r"\1/**"),
        (r"^(/(tool_use_result|structured_output))/.*", r"\1/**"),
        (r"^(/permission_denials/\*/tool_input)/.*", r"\1/**"),
        (r"^(/deferred_tool_use/input)/.*", r"\1/**"),
        (r"^(/event/content_block/input|/event/message/content)/.*", r"\1/**"),
        # session files: tool results, sub-agent progress and undo backups are free-form
        (r"^(/(toolUseResult|data/message|snapshot/trackedFileBackups))/.*", r"\1/**"),
    ],
    "codex": [
        (r"^/item/agents_states/[^/]+", "/item/agents_states/*"),
        (r"^/msg/changes/[^/]+", "/msg/changes/*"),
        (r"^(/item/(arguments|result/content|result/structured_content))/.*", r"\1/**"),
        (r"^(/msg/(arguments|invocation/arguments|result/Ok/content|result/Err))/.*", r"\1/**"),
    ],
    "cursor": [
        (r"^(/tool_call/[^/]+/args)/.*", r"\1/**"),
        (r"^(/tool_call/[^/]+/result)/[^/]+(/.*)?$", r"\1/*/**"),
        (r"^(/tool_call/function)/.*", r"\1/**"),
    ],
    "pi": [
        (r"^(/message/content/\*/arguments|/message/details|/result/details|/args)/.*", r"\1/**"),
        (r"^(/messages|/toolResults|/partialResult|/assistantMessageEvent/partial)/.*", r"\1/**"),
        (r"^(/assistantMessageEvent/(partial|message|toolCall))/.*", r"\1/**"),
    ],
    "opencode": [
        (r"^(/part/state/(input|metadata))/.*", r"\1/**"),
        (r"^(/error/data/(responseHeaders|metadata))/.*", r"\1/**"),
    ],
    "grok": [
        (r"^/modelUsage/[^/]+", "/modelUsage/*"),
        (r"^(/rawInput|/rawOutput|/toolCall/function/arguments)/.*", r"\1/**"),
    ],
}
# keys documented by the vendor schema the dialect follows, beyond our notes
EXTRA = {
    # Anthropic Messages API: SSE events and context management
    "claude": {"content_block", "partial_json", "applied_edits"},
    # Agent Client Protocol (grok streaming-json follows it): tool-call content items (diff,
    # terminal), tool-call locations, plan entry priority
    "grok": {"newText", "oldText", "terminalId", "locations", "path", "priority"},
    # pi json.md "extended messages": bashExecution{command, output, exitCode},
    # custom{customType, content, display, details}, branchSummary{summary, fromId}
    "pi": {"exitCode", "customType", "display", "fromId"},
}


# seen under a dialect only through `auto` falling back to it (a grok `error` line as claude)
DROP = {"claude": {"error"}}


def leaves(v, path, out):
    if isinstance(v, dict):
        if not v:
            out.add(path)
        for k, x in v.items():
            leaves(x, f"{path}/{_escape(k)}", out)
    elif isinstance(v, list):
        if not v:
            out.add(path)
        for x in v:
            leaves(x, path + "/*", out)
    else:
        out.add(path)


NAMES = {d: re.compile(rf"(?<![A-Za-z0-9_-]){d}(?![A-Za-z0-9_-])", re.I) for d in CODED}


def notes_for(dialect: str) -> str:
    """The lines of the notes that are about ``dialect``: under a heading naming it, or naming
    it themselves (a table row, a sentence)."""
    name = NAMES[dialect]
    out = []
    for p in DOCS:
        h2 = h3 = ""
        for line in (ROOT / p).read_text("utf-8").splitlines():
            if line.startswith("## "):
                h2, h3 = line, ""
            elif line.startswith("### "):
                h3 = line
            if name.search(h2) or name.search(h3) or name.search(line):
                out.append(line)
    return "\n".join(out)


def _drop(v, parts):
    head, rest = parts[0], parts[1:]
    if head == "*" and isinstance(v, list):
        for x in v:
            if rest:
                _drop(x, rest)
    elif isinstance(v, dict) and head in v:
        if rest:
            _drop(v[head], rest)
        else:
            del v[head]


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--write"]
    seen = defaultdict(lambda: defaultdict(set))
    mapped = defaultdict(dict)  # dialect -> record -> shortest sample raw
    unknown = defaultdict(set)
    for f in expand_paths(args or [str(ROOT / p) for p in DEFAULT]):
        if not f.endswith(".jsonl") or f.endswith(".expected.jsonl"):
            continue
        last = None
        for e in checkfu_fast.normalize(Path(f).read_bytes()):
            if e["position"] == last or e["subtype"] == "dialect_fallback":
                continue
            last = e["position"]
            p = e.get("parsed")
            if not isinstance(p, dict) or e["dialect"] not in CODED:
                continue
            d = e["dialect"]
            name = registry(d).record_type(_base_type(e), p)
            if e["kind"] == "status" and e["subtype"] == "unknown":
                unknown[d].add(name)
            else:
                old = mapped[d].get(name)
                if old is None or len(e["raw"]) < len(old):
                    mapped[d][name] = e["raw"]
            s = set()
            leaves(p, "", s)
            seen[d][name] |= s
    for d in CODED:
        docs = notes_for(d)
        src = (ROOT / f"python/checkfu_fast/reference/dialects/{d}.py").read_text("utf-8")
        src += (ROOT / f"rust/dialects/{d}.rs").read_text("utf-8")  # the twin reads the same
        if d == "cursor":  # cursor content blocks are claude's
            src += (ROOT / "python/checkfu_fast/reference/dialects/claude.py").read_text("utf-8")
            src += (ROOT / "rust/dialects/claude.rs").read_text("utf-8")

        def known_key(k: str, src: str = src, d: str = d, docs: str = docs) -> bool:
            k = k.replace("~1", "/").replace("~0", "~")
            return (
                k in ("*", "**")
                or f'"{k}"' in src
                or k in EXTRA.get(d, ())
                or re.search(r"(?<![A-Za-z0-9_])" + re.escape(k) + r"(?![A-Za-z0-9_])", docs)
                is not None
            )

        path = KNOWN_DIR / f"{d}.json"
        doc = json.loads(path.read_text("utf-8"))
        records, documented, rejected = {}, {}, []
        for name in sorted(seen[d]):
            ptrs = set()
            for p in seen[d][name]:
                for rx, rep in RULES.get(d, []):
                    p = re.sub(rx, rep, p)
                segs = p.split("/")[1:]
                if "**" in segs:
                    segs = segs[: segs.index("**") + 1]
                if all(known_key(s) for s in segs):
                    ptrs.add("/" + "/".join(segs) if segs else "")
                else:
                    rejected.append((name, "/" + "/".join(segs)))
            fields = sorted(x for x in ptrs if x)
            if name in mapped[d]:
                records[name] = {"sample": json.loads(mapped[d][name]), "fields": fields}
            elif name in DROP.get(d, ()):
                rejected.append((name, "(another CLI's line)"))
            elif known_key(name.rsplit("/", 1)[-1]):
                documented[name] = {"fields": fields}
            else:
                rejected.append((name, "(record type not in the notes)"))
        # a subtyped record whose subtype is not listed falls back to its base entry: make that
        # the union of the subtypes' fields, with one of their samples
        for base in doc.get("subtypes", {}):
            subs = [r for r in records if r.startswith(base + "/")]
            if subs and base not in records:
                union = sorted({f for r in subs for f in records[r]["fields"]})
                records[base] = {"sample": records[subs[0]]["sample"], "fields": union}
        records = dict(sorted(records.items()))
        doc["records"], doc["documented"] = records, documented
        # a sample holds known fields only: drop the ones the registry does not know
        reg = Registry(doc, str(path))
        for name, rec in records.items():
            for pointer in unknown_fields(reg.trie(name), rec["sample"]):
                parts = [s.replace("~1", "/").replace("~0", "~") for s in pointer[1:].split("/")]
                _drop(rec["sample"], parts)
        print(f"{d}: {len(records)} records, {len(documented)} documented only")
        for r in rejected:
            print("   unknown:", *r)
        if "--write" in sys.argv:
            path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    main()
