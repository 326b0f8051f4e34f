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
3. No import cycle between the modules of a crate. Each library and executable target is
   walked from its root file through its `mod` declarations (files under `src/`, module
   path from the file path, `#[path]` followed). Module A depends on module B when A's
   code (not its comments or strings) names `crate::B...`, `super::...` or `self::...`
   resolving to B, or a path starting with one of its own child modules; B is the
   deepest module the path names, and an inline module counts as its file's module.
   Naming an ancestor is no dependency (a child uses what its parent defines), and the
   crate root is everyone's ancestor. Each cycle is reported as `crate: a -> b -> a`,
   with the line behind each step.

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
    ("bins", ["console", "dispatcher", "mcp-gateway", "platform-sim", "scheduler", "warden-admin", "webhook"]),
    # The processes' logic (and the platform stand-in).
    (
        "services",
        [
            "warden-gateway",
            "warden-dispatcher",
            "warden-webhook",
            "warden-console",
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


# --- 3. Module import cycles -------------------------------------------------------------

# Identifiers, `::`, or any other single character.
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|\S")
# `#[path = "file.rs"]` on a `mod name;` declaration (other attributes may sit between).
PATH_ATTR = re.compile(
    r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;'
)
# A char literal ('{', '\'', '\u{7f}'), blanked before tokens are read: its brace is no block.
CHAR = re.compile(r"'(?:\\[^']*|[^\\'\n])'")
# Cycles listed per strongly connected component before the rest are only counted.
MAX_CYCLES = 20


def code_tokens(text):
    """(line, token) of the code of a Rust file: comments and string literals left out."""
    out = []
    for line, kind, chunk in lex(text):
        if kind != "code":
            continue
        chunk = CHAR.sub(lambda m: " " * len(m.group(0)), chunk)
        # `lex` numbers a chunk that starts with a line break from the line after it.
        first = line - chunk.startswith("\n")
        for m in TOKEN.finditer(chunk):
            out.append((first + chunk.count("\n", 0, m.start()), m.group(0)))
    return out


def module_files(root_file, src):
    """{module path (tuple): file} of one target, from its root file through its `mod
    name;` declarations, keeping only files under `src`."""
    found = {}

    def visit(path, file, is_dir_owner):
        if file in found.values() or not os.path.isfile(file):
            return
        if os.path.commonpath([os.path.abspath(file), src]) != src:
            return
        found[path] = file
        with open(file, encoding="utf-8") as f:
            text = f.read()
        here = os.path.dirname(file)
        attrs = {name: target for target, name in PATH_ATTR.findall(text)}
        tokens = [t for _, t in code_tokens(text)]
        depth = 0
        for i, tok in enumerate(tokens):
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
            elif (
                tok == "mod"
                and depth == 0
                and i + 2 < len(tokens)
                and tokens[i + 2] == ";"
                and TOKEN.fullmatch(tokens[i + 1])
            ):
                name = tokens[i + 1]
                if name in attrs:
                    visit(path + (name,), os.path.normpath(os.path.join(here, attrs[name])), False)
                    continue
                base = here if is_dir_owner else os.path.join(here, os.path.splitext(os.path.basename(file))[0])
                flat = os.path.join(base, name + ".rs")
                nested = os.path.join(base, name, "mod.rs")
                if os.path.isfile(flat):
                    visit(path + (name,), flat, False)
                else:
                    visit(path + (name,), nested, True)

    visit((), os.path.abspath(root_file), True)
    return found


def module_name(path):
    return "::".join(path) if path else "crate"


def is_ancestor(a, b):
    """Whether module `a` is `b` or one of its ancestors."""
    return b[: len(a)] == a


def module_edges(files):
    """{(a, b): (file, line, text)}: module a names module b (the first place it does)."""
    modules = set(files)
    tokens = {}
    for node, file in files.items():
        with open(file, encoding="utf-8") as f:
            tokens[node] = code_tokens(f.read())
    children = {}
    for m in modules:
        if m:
            children.setdefault(m[:-1], set()).add(m[-1])
    # What each module's own `use` items bring in from the crate (`pub use` re-exports and
    # private imports alike: a descendant may name them through this module's path).
    imports = {node: {} for node in modules}
    for node in modules:
        for i, here, depth in walk(tokens[node], node, children):
            if depth or tokens[node][i][1] != "use":
                continue
            start = i + 1
            if tokens[node][start][1] == "::":
                continue
            for segments, alias in parse_use_tree(tokens[node], start, [])[0]:
                first = segments[0] if segments else ""
                if first not in ("crate", "super", "self") and first not in children.get(node, ()):
                    continue
                path = absolute(segments, node)
                if path is None or not path:
                    continue
                if path[-1] == "self":
                    path = path[:-1]
                name = alias or (path[-1] if path else None)
                if name and name != "_" and path != ["*"]:
                    imports[node][name] = path
    edges = {}
    for node, file in sorted(files.items()):
        toks = tokens[node]
        skip_to = 0
        for i, here, _ in walk(toks, node, children):
            if i < skip_to:
                continue
            line, tok = toks[i]
            nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
            prev = toks[i - 1][1] if i > 0 else ""
            starts = tok in ("crate", "super", "self") or (
                here == node and tok in children.get(node, ())
            )
            if not (starts and nxt == "::" and prev not in ("$", "::", ".")):
                continue
            paths, end = parse_use_tree(toks, i, [])
            for segments, _ in paths:
                target = resolve(absolute(segments, here), modules, imports)
                if target is None or is_ancestor(target, node):
                    continue
                text = "".join(t for _, t in toks[i:end])
                edges.setdefault((node, target), (file, line, text))
            skip_to = end
    return edges


def walk(tokens, node, children):
    """(index, module path there, depth inside inline modules) for each token of a file
    of module `node` (`mod tests { ... }` is an inline module of it)."""
    inline, depth, pending = [], 0, None
    for i, (_, tok) in enumerate(tokens):
        if tok == "mod" and i + 2 < len(tokens) and tokens[i + 2][1] == "{":
            pending = tokens[i + 1][1]
        if tok == "{":
            depth += 1
            if pending:
                inline.append((pending, depth))
                pending = None
        elif tok == "}":
            if inline and inline[-1][1] == depth:
                inline.pop()
            depth -= 1
        yield i, node + tuple(name for name, _ in inline), depth


def parse_use_tree(tokens, i, prefix):
    """([(segments, alias)], index after) of the path or use tree starting at token i."""
    segments = list(prefix)
    n = len(tokens)
    while i < n:
        tok = tokens[i][1]
        if tok == "{":
            paths, i = [], i + 1
            while i < n and tokens[i][1] != "}":
                before = i
                sub, i = parse_use_tree(tokens, i, segments)
                paths += sub
                if i < n and tokens[i][1] == ",":
                    i += 1
                elif i == before:
                    i += 1
            return paths or [(segments, None)], i + 1
        if tok == "*":
            return [(segments + ["*"], None)], i + 1
        if TOKEN.fullmatch(tok) and (tok[0].isalpha() or tok[0] == "_"):
            segments.append(tok)
            if i + 1 < n and tokens[i + 1][1] == "::":
                i += 2
                continue
            if i + 2 < n and tokens[i + 1][1] == "as":
                return [(segments, tokens[i + 2][1])], i + 3
            return [(segments, None)], i + 1
        return [(segments, None)], i
    return [(segments, None)], i


def absolute(segments, here):
    """The crate-absolute path (list) of a path written in module `here`, None when it
    climbs above the crate root."""
    path = list(here)
    for k, seg in enumerate(segments):
        if seg == "crate" and k == 0:
            path = []
        elif seg == "super":
            if not path:
                return None
            path.pop()
        elif seg == "self" and k == 0:
            pass
        else:
            path.append(seg)
    return path


def resolve(path, modules, imports):
    """The deepest module (tuple) an absolute path names, following what modules import
    (`crate::Name` re-exported from `crate::a` names `a`); None when unknown."""
    if path is None:
        return None
    seen = set()
    while True:
        n = len(path)
        while n > 0 and tuple(path[:n]) not in modules:
            n -= 1
        owner = tuple(path[:n])
        if owner not in modules:
            return None
        if n < len(path) and path[n] in imports.get(owner, {}) and (owner, path[n]) not in seen:
            seen.add((owner, path[n]))
            path = imports[owner][path[n]] + path[n + 1 :]
            continue
        return owner


def strongly_connected(nodes, graph):
    """Tarjan's components of two or more modules."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            connect(v)
    return out


def cycles_in(component, graph):
    """The elementary cycles of one component (each from its smallest module), at most
    MAX_CYCLES + 1 of them."""
    members = set(component)
    found = []
    for start in component:
        # Cycles through `start` using only modules after it (each cycle found once).
        allowed = {m for m in members if m >= start}
        stack = [(start, [start])]
        while stack and len(found) <= MAX_CYCLES:
            v, path = stack.pop()
            for w in sorted(graph.get(v, ()), reverse=True):
                if w == start:
                    found.append(path + [start])
                elif w in allowed and w not in path:
                    stack.append((w, path + [w]))
        if len(found) > MAX_CYCLES:
            break
    return sorted(found, key=lambda c: (len(c), c))


def check_cycles(metadata, root):
    """(crate, cycle, [(a, b, file, line, text)]) of each module import cycle."""
    out = []
    for package in sorted(metadata["packages"], key=lambda p: p["name"]):
        src = os.path.join(os.path.dirname(package["manifest_path"]), "src")
        for target in sorted(package["targets"], key=lambda t: t["name"]):
            if not {"lib", "bin", "proc-macro"} & set(target["kind"]):
                continue
            name = package["name"]
            if "bin" in target["kind"] and target["name"] != name:
                name = f"{name} (bin {target['name']})"
            files = module_files(target["src_path"], os.path.abspath(src))
            edges = module_edges(files)
            graph = {}
            for a, b in edges:
                graph.setdefault(a, set()).add(b)
            for component in strongly_connected(files, graph):
                cycles = cycles_in(component, graph)
                if len(cycles) > MAX_CYCLES:
                    cycles = cycles[:MAX_CYCLES]
                    print(
                        f"module cycles: {name}: more than {MAX_CYCLES} among "
                        f"{', '.join(module_name(m) for m in component)}; the first {MAX_CYCLES}:"
                    )
                for cycle in cycles:
                    steps = [
                        (a, b, os.path.relpath(edges[(a, b)][0], root), *edges[(a, b)][1:])
                        for a, b in zip(cycle, cycle[1:])
                    ]
                    out.append((name, cycle, steps))
    return out


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

    cycles = check_cycles(metadata, root)
    for crate, cycle, steps in cycles:
        print(f"module cycle: {crate}: {' -> '.join(module_name(m) for m in cycle)}")
        for a, b, rel, number, text in steps:
            print(f"    {module_name(a)} -> {module_name(b)}: {rel}:{number}: {text}")
    if cycles:
        print(f"{len(cycles)} module import cycles")
    failed |= bool(cycles)

    if not failed:
        print("layers: ok")
        return 0
    if args.warn_only:
        print("(--warn-only: not failing)")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
