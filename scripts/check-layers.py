#!/usr/bin/env python3
"""Check the workspace's layering (Python 3 standard library only).

1. Dependencies between workspace crates, from `cargo metadata --format-version 1
   --no-deps`: a crate may depend (normal or build dependency) only on crates of a lower
   layer in LAYERS below; its dev-dependencies (tests) may also use crates of its own
   layer, never a higher one. A crate missing from the table is an error too, so a new
   crate gets its place written down.
2. Diesel's write API (`insert_into`, `diesel::update`, `diesel::delete`, a `sql_query`
   whose SQL writes) appears only in the crates that own domain writes (WRITERS), in
   `src/` of the other crates (tests, benches, examples, `src/bin` executables and
   `#[cfg(test)]` modules excluded).

Usage: scripts/check-layers.py [--warn-only] [--metadata FILE]
Exit code 1 naming each offending edge or file, 0 when clean (or with --warn-only).
"""

import argparse
import json
import os
import re
import subprocess
import sys

# Top to bottom. Each crate may depend only on crates of the layers below its own.
LAYERS = [
    # Benchmarks, fault drills and end-to-end tests: may use anything below.
    ("tools", ["warden-bench", "warden-faults", "warden-trace-tests"]),
    # Thin binaries: parse flags, start, decide exit codes.
    ("bins", ["dispatcher", "mcp-gateway", "platform-sim", "scheduler", "warden-admin", "webhook"]),
    # The processes' logic (and the platform stand-in).
    (
        "services",
        [
            "warden-gateway",
            "warden-dispatcher",
            "warden-webhook",
            "warden-scheduler",
            "warden-import",
            "warden-sim",
        ],
    ),
    # Start-up wiring: settings -> telemetry -> dependencies, admin HTTP, shutdown.
    ("wiring", ["warden-service"]),
    # The domain: the only writer of domain state.
    ("core", ["warden-core"]),
    # What tests share (a database per test, waiting, processes): see TEST_SUPPORT.
    ("test-support", ["warden-test-support"]),
    # Postgres, JetStream, Redis.
    ("infrastructure", ["warden-store", "warden-stream", "warden-ratelimit"]),
    # Pure rules, the platform's wire types and client, settings, telemetry.
    ("foundation", ["warden-rules", "warden-platform", "warden-settings", "warden-telemetry"]),
]

# Test-only crates: any crate's tests may use them (a dev-dependency from any layer), no
# crate may ship with them (never a normal or build dependency).
TEST_SUPPORT = {"warden-test-support"}

# Crates allowed to use diesel's write API in src/.
WRITERS = {"warden-store", "warden-core"}

WRITE_CALLS = [
    re.compile(r"\binsert_into\s*\("),
    re.compile(r"\bdiesel::update\s*\("),
    re.compile(r"\bdiesel::delete\s*\("),
    re.compile(r"(?<![\w:.])(?:update|delete)\s*\(\s*[\w:]*\btable\b"),
]
# SQL that writes, inside a string literal of a file that runs raw SQL (`sql_query`).
WRITE_SQL = re.compile(
    r"\b(INSERT\s+INTO|UPDATE\s+\w+(\s+\w+)?\s+SET|DELETE\s+FROM|TRUNCATE|MERGE\s+INTO)\b",
    re.IGNORECASE,
)


def rank_of():
    ranks = {}
    for index, (layer, crates) in enumerate(LAYERS):
        for crate in crates:
            ranks[crate] = (index, layer)
    return ranks


def load_metadata(path):
    if path:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        check=True,
        stdout=subprocess.PIPE,
    )
    return json.loads(out.stdout)


def check_edges(metadata):
    """Offending edges, one line each."""
    ranks = rank_of()
    members = {p["name"] for p in metadata["packages"]}
    problems = []
    for crate in sorted(members - ranks.keys()):
        problems.append(f"{crate}: not in the layer table of scripts/check-layers.py")
    for package in sorted(metadata["packages"], key=lambda p: p["name"]):
        crate = package["name"]
        if crate not in ranks:
            continue
        mine, layer = ranks[crate]
        seen = set()
        for dep in package["dependencies"]:
            name, kind = dep["name"], dep.get("kind") or "normal"
            if name not in members or name not in ranks or (name, kind) in seen:
                continue
            seen.add((name, kind))
            theirs, their_layer = ranks[name]
            # Lower layers have higher indexes. Tests may also use their own layer, and the
            # test-support crates from anywhere (but nothing may ship with them).
            if name in TEST_SUPPORT:
                if kind != "dev":
                    problems.append(
                        f"{crate} ({layer}) -> {name}: a test-support crate may only be a dev-dependency"
                    )
                continue
            allowed = theirs > mine or (kind == "dev" and theirs == mine and name != crate)
            if not allowed:
                what = "dev-dependency" if kind == "dev" else "dependency"
                problems.append(
                    f"{crate} ({layer}) -> {name} ({their_layer}): {what} not allowed; "
                    f"{layer} may use only {allowed_layers(mine, kind)}"
                )
    return problems


def allowed_layers(mine, kind):
    below = [layer for layer, _ in LAYERS[mine + 1 :]]
    if kind == "dev":
        below = [LAYERS[mine][0]] + below
    return ", ".join(below) if below else "nothing"


def product_sources(package):
    """The crate's src/ files, without executables (src/bin, src/main.rs of a tool)."""
    root = os.path.dirname(package["manifest_path"])
    src = os.path.join(root, "src")
    for directory, dirs, files in os.walk(src):
        rel = os.path.relpath(directory, src)
        if rel.split(os.sep)[0] == "bin":
            dirs[:] = []
            continue
        for name in sorted(files):
            if name.endswith(".rs"):
                yield os.path.join(directory, name)


def strip_tests(text):
    """The text before the first `#[cfg(test)]` (test modules close the file)."""
    cut = text.find("#[cfg(test)]")
    return text if cut < 0 else text[:cut]


def lex(text):
    """Split Rust source into (line, kind, text) tokens of kind "code", "string" or
    "comment": enough to find SQL in string literals and calls outside comments."""
    out, i, n, line = [], 0, len(text), 1
    code_start, code_line = 0, 1

    def flush(end):
        if end > code_start:
            out.append((code_line, "code", text[code_start:end]))

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            flush(i)
            out.append((line, "comment", text[i:end]))
            i, code_start, code_line = end, end, line
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            flush(i)
            out.append((line, "comment", text[i:end]))
            line += text.count("\n", i, end)
            i, code_start, code_line = end, end, line
            continue
        raw = re.match(r'b?r(#*)"', text[i : i + 40])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + raw.group(1)
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            flush(i)
            out.append((line, "string", text[i:end]))
            line += text.count("\n", i, end)
            i, code_start, code_line = end, end, line
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            flush(i)
            out.append((line, "string", text[i:end]))
            line += text.count("\n", i, end)
            i, code_start, code_line = end, end, line
            continue
        if c == "'":
            # A char literal ('"', '\'', '\\'); a lifetime has no closing quote.
            m = re.match(r"'(\\.|[^\\'])'", text[i : i + 4])
            if m:
                i += m.end()
                continue
        if c == "\n":
            line += 1
            if code_start == i:
                code_line = line
        i += 1
    flush(n)
    return out


def check_writes(metadata, root):
    """(file, line, what) of each diesel write outside WRITERS."""
    hits = []
    for package in sorted(metadata["packages"], key=lambda p: p["name"]):
        if package["name"] in WRITERS:
            continue
        for path in product_sources(package):
            with open(path, encoding="utf-8") as f:
                text = strip_tests(f.read())
            rel = os.path.relpath(path, root)
            for line, kind, chunk in lex(text):
                if kind == "code":
                    for call in WRITE_CALLS:
                        for m in call.finditer(chunk):
                            at = line + chunk.count("\n", 0, m.start())
                            hits.append((rel, at, " ".join(m.group(0).split())))
                elif kind == "string":
                    m = WRITE_SQL.search(chunk)
                    if m:
                        at = line + chunk.count("\n", 0, m.start())
                        hits.append((rel, at, "SQL " + " ".join(m.group(0).split())))
    return sorted(set(hits))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--warn-only", action="store_true", help="print what is wrong but exit 0"
    )
    parser.add_argument("--metadata", help="read cargo metadata JSON from this file")
    args = parser.parse_args()

    metadata = load_metadata(args.metadata)
    root = metadata.get("workspace_root") or os.getcwd()
    failed = False

    edges = check_edges(metadata)
    for line in edges:
        print(f"layering: {line}")
    failed |= bool(edges)

    writes = check_writes(metadata, root)
    for rel, number, what in writes:
        print(f"diesel write outside {' / '.join(sorted(WRITERS))}: {rel}:{number}: {what}")
    if writes:
        files = sorted({rel for rel, _, _ in writes})
        print(f"{len(writes)} diesel writes in {len(files)} files outside the core and the store")
    failed |= bool(writes)

    if not failed:
        print("layers: ok")
        return 0
    if args.warn_only:
        print("(--warn-only: not failing)")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
