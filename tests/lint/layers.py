#!/usr/bin/env python3
"""layers.py ROOT: fails (exit 1, one line per offence) when a file includes a higher layer.

The layers, lowest first (docs/ARCHITECTURE.md, "Layers"):
  core <- formats <- hub <- tokenizer <- backend <- model <- engine <- queue <- translate
  <- include/hymt.h (the public header) <- server <- cli
A file under src/<layer>/ (tests beside their code included) may include its own layer and
lower ones. Files under tests/<layer>/ follow that layer's rule; other files under tests/
may include any layer. An include of a header under tests/ (test.h, logits_util.h, ...)
counts as including everything that header includes, followed to the end, so a backend
test cannot reach the model through a shared test helper. Includes are resolved as the
compiler does for quotes: the including file's folder, then src/, include/, tests/; a
path that resolves nowhere but starts with a layer's folder (a generated header such as
server/web_page.h) belongs to that layer; anything else (system headers) is ignored.
An unknown folder under src/ is an offence too: add it to LAYERS and to ARCHITECTURE.md.
Before checking ROOT the script checks itself on a scratch tree with planted upward
includes (direct and through a tests/ helper) that it must report."""

import os
import re
import sys

import lint_main
import tempfile

LAYERS = ["core", "formats", "hub", "tokenizer", "backend", "model", "engine", "queue", "translate",
          "include", "server", "cli"]
RANK = {name: i for i, name in enumerate(LAYERS)}
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def includes_of(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE_RE.findall(f.read())


def resolve(root, includer, name):
    """(path or None, layer or None, is_test_header) of an include."""
    for base in (os.path.dirname(includer), os.path.join(root, "src"),
                 os.path.join(root, "include"), os.path.join(root, "tests")):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p, layer_of(root, p), p.startswith(os.path.join(root, "tests") + os.sep)
    first = name.split("/")[0]
    if "/" in name and first in RANK and first != "include":
        return None, first, False
    return None, None, False


def layer_of(root, path):
    """The layer whose rule a file follows, None for unrestricted test files, or '?NAME'
    for a folder under src/ that is not a layer."""
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == "src" and len(rel) > 2:
        return rel[1] if rel[1] in RANK else "?" + rel[1]
    if rel[0] == "include":
        return "include"
    if rel[0] == "tests" and len(rel) > 2 and rel[1] in RANK:
        return rel[1]
    return None


def reached(root, path, seen):
    """(layer, chain) for every layer a file reaches: its own includes, and through headers
    under tests/ their includes in turn. chain: the includes that lead there."""
    out = []
    for name in includes_of(path):
        p, layer, is_test = resolve(root, path, name)
        if layer is not None:
            out.append((layer, [name]))
        if is_test and p not in seen:
            seen.add(p)
            out += [(lay, [name] + chain) for lay, chain in reached(root, p, seen)]
    return out


def check(root):
    bad = []
    for top in ("src", "include", "tests"):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x != "data")
            for f in sorted(files):
                if not f.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                own = layer_of(root, path)
                if own is None:
                    continue
                if own.startswith("?"):
                    bad.append(f"{rel}: src/{own[1:]}/ is not a layer (tests/lint/layers.py LAYERS)")
                    continue
                for layer, chain in reached(root, path, {path}):
                    if not layer.startswith("?") and RANK[layer] > RANK[own]:
                        bad.append(f"{rel}: {own} includes {layer}: " + " -> ".join(chain))
    return bad


def self_test():
    """The check must pass a clean scratch tree and report each planted upward include."""
    files = {
        "src/core/a.h": "",
        "src/backend/cuda/x_test.c": '#include "core/a.h"\n#include "test.h"\n',
        "src/model/m.h": '#include "backend/cuda/x.h"\n',
        "src/backend/cuda/x.h": "",
        "src/server/s.c": '#include "server/web_page.h"\n#include <stdio.h>\n',
        "tests/test.h": "",
        "tests/helper.h": '#include "model/m.h"\n',
        "tests/parity/p.c": '#include "cli/c.h"\n',
        "tests/engine/e.c": '#include "model/m.h"\n',
    }
    planted = {
        "src/backend/cuda/y_test.c": '#  include "model/m.h"\n',
        "src/core/b.c": '#include "helper.h"\n',
        "tests/engine/f.c": '#include "translate/t.h"\n',
        "src/widgets/w.c": "",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        clean = check(tmp)
        for rel, text in planted.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        found = check(tmp)
    ok = clean == [] and sorted(b.split(":")[0] for b in found) == sorted(planted)
    if not ok:
        print("layers.py self-test failed: clean tree:", clean, "planted tree:", found)
    return ok


if __name__ == "__main__":
    sys.exit(lint_main.run("layers", check, self_test, "upward include(s)"))
