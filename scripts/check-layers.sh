#!/usr/bin/env bash
# Checks the may-import arrows of docs/ARCHITECTURE.md §2.2 against the tree:
#   (a) every `import X` in a target's Swift files names a target its arrows allow, or a
#       system module its line allows;
#   (b) Package.swift's `dependencies:` of each target name only targets its arrows allow;
#   and every non-test target of Package.swift has a line in the arrows.
# The arrows are read from the ```layers block of docs/ARCHITECTURE.md, and nowhere else, so
# the document and the check cannot drift apart.
#
# Usage: scripts/check-layers.sh [--report] [ROOT]
#   Exits 1 with one line per violation; with --report prints them and exits 0.
#   Exits 2 when the arrows or Package.swift cannot be read.
set -euo pipefail

report=0
root=""
for arg in "$@"; do
    case "$arg" in
        --report) report=1 ;;
        -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "check-layers: unknown option $arg" >&2; exit 2 ;;
        *) root="$arg" ;;
    esac
done
root="${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"

exec python3 - "$root" "$report" <<'PYTHON'
import os
import re
import sys

root, report = sys.argv[1], sys.argv[2] == "1"
doc = os.path.join(root, "docs", "ARCHITECTURE.md")
package = os.path.join(root, "Package.swift")


def fail(message):
    print(f"check-layers: {message}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- the arrows
def read_arrows():
    try:
        text = open(doc, encoding="utf-8").read()
    except OSError as error:
        fail(f"cannot read {doc}: {error.strerror}")
    blocks = re.findall(r"^```layers\n(.*?)^```", text, re.S | re.M)
    if len(blocks) != 1:
        fail(f"{doc} must hold exactly one ```layers block (found {len(blocks)})")
    arrows = {}
    for number, line in enumerate(blocks[0].splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_-]+)\s*:\s*([^|]*)\|\s*(.*)", line)
        if not match:
            fail(f"{doc}: layers block line {number} is not 'Target: targets | modules': {line}")
        name, targets, modules = match.groups()
        if name in arrows:
            fail(f"{doc}: layers block names {name} twice")
        arrows[name] = (set(targets.split()), set(modules.split()))
    return arrows


# ---------------------------------------------------------------- Package.swift
def strip_comments(text):
    """Package.swift without // and /* */ comments, string literals kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif text[i] == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i:end + 1])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def balanced(text, start):
    """The text inside the bracket at `start` up to its match (strings skipped)."""
    pairs = {"(": ")", "[": "]"}
    stack, i = [pairs[text[start]]], start + 1
    while i < len(text) and stack:
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1) + 1
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
        i += 1
    return text[start + 1:i - 1]


def top_level_arguments(text):
    """label -> value text of a call's arguments at depth 0."""
    args, depth, current, i = {}, 0, [], 0
    pieces = []
    while i < len(text):
        c = text[i]
        if c == '"':
            end = text.index('"', i + 1)
            current.append(text[i:end + 1])
            i = end + 1
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            pieces.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    pieces.append("".join(current))
    for piece in pieces:
        match = re.match(r"\s*([A-Za-z]+)\s*:\s*(.*)\Z", piece, re.S)
        if match:
            args[match.group(1)] = match.group(2).strip()
    return args


def read_package():
    try:
        text = strip_comments(open(package, encoding="utf-8").read())
    except OSError as error:
        fail(f"cannot read {package}: {error.strerror}")
    targets = {}
    for match in re.finditer(
        r"\.(target|executableTarget|testTarget|systemLibrary|binaryTarget|macro|plugin)\s*\(", text
    ):
        kind = match.group(1)
        args = top_level_arguments(balanced(text, match.end() - 1))
        name = re.fullmatch(r'"([^"]+)"', args.get("name", ""))
        if not name:
            continue
        dependencies = []
        if "dependencies" in args:
            value = args["dependencies"]
            # "X", .target(name: "X"), .product(name: "X", package: …), .byName(name: "X")
            for item in top_level_arguments_list(value):
                found = re.search(r'"([^"]+)"', item)
                if found:
                    dependencies.append(found.group(1))
        path = re.fullmatch(r'"([^"]+)"', args.get("path", ""))
        targets[name.group(1)] = {
            "kind": kind,
            "dependencies": dependencies,
            "path": path.group(1) if path else None,
        }
    if not targets:
        fail(f"{package} declares no targets that this script can read")
    return targets


def top_level_arguments_list(value):
    value = value.strip()
    if not value.startswith("["):
        return []
    inner = balanced(value, 0)
    items, depth, current = [], 0, []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == '"':
            end = inner.index('"', i + 1)
            current.append(inner[i:end + 1])
            i = end + 1
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    items.append("".join(current))
    return [item for item in items if item.strip()]


# ---------------------------------------------------------------- imports
IMPORT = re.compile(
    r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|package|internal|fileprivate|private)\s+)?"
    r"import\s+(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)"
)


def swift_imports(directory):
    """(file, line, module) of every import in the Swift files under `directory`."""
    found = []
    for base, _, files in sorted(os.walk(directory)):
        for file in sorted(files):
            if not file.endswith(".swift"):
                continue
            path = os.path.join(base, file)
            in_block = False
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if in_block:
                        if "*/" in line:
                            in_block = False
                            line = line.split("*/", 1)[1]
                        else:
                            continue
                    if line.lstrip().startswith("/*") and "*/" not in line:
                        in_block = True
                        continue
                    match = IMPORT.match(line)
                    if match:
                        found.append((os.path.relpath(path, root), number, match.group(1)))
    return found


# ---------------------------------------------------------------- the checks
arrows = read_arrows()
targets = read_package()
violations = []


def is_test(name, target):
    path = target["path"] or ""
    return target["kind"] == "testTarget" or path == "Tests" or path.startswith("Tests/")


for name, target in sorted(targets.items()):
    if name not in arrows:
        if not is_test(name, target):
            violations.append(
                f"Package.swift: target {name} has no line in docs/ARCHITECTURE.md's layers block "
                f"(write its arrows there first)")
        continue
    allowed_targets, _ = arrows[name]
    for dependency in target["dependencies"]:
        if dependency not in allowed_targets:
            violations.append(
                f"Package.swift: {name} depends on {dependency}, which its arrows do not allow "
                f"(allowed: {', '.join(sorted(allowed_targets)) or 'none'})")

for name in sorted(arrows):
    if name not in targets:
        violations.append(
            f"docs/ARCHITECTURE.md: layers block names {name}, which Package.swift does not declare")

for name, (allowed_targets, allowed_modules) in sorted(arrows.items()):
    target = targets.get(name)
    if target is None or target["kind"] in ("systemLibrary", "binaryTarget"):
        continue
    directory = os.path.join(root, target["path"] or os.path.join("Sources", name))
    if not os.path.isdir(directory):
        continue
    for path, number, module in swift_imports(directory):
        if module in allowed_targets or module in allowed_modules:
            continue
        if module in targets:
            violations.append(
                f"{path}:{number}: {name} imports {module}, which its arrows do not allow "
                f"(allowed targets: {', '.join(sorted(allowed_targets)) or 'none'})")
        else:
            violations.append(
                f"{path}:{number}: {name} imports system module {module}, which its line does not "
                f"allow (allowed: {', '.join(sorted(allowed_modules)) or 'none'})")

for violation in violations:
    print(violation)
if violations:
    print(f"check-layers: {len(violations)} violation(s) of docs/ARCHITECTURE.md §2.2", file=sys.stderr)
    sys.exit(0 if report else 1)
print("check-layers: every import and dependency follows docs/ARCHITECTURE.md §2.2")
PYTHON
