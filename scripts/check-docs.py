#!/usr/bin/env python3
"""The Markdown files' links and images, and the README's length (`make docs-check`, part of `make test`).

Every relative link or image must name a file that exists; a link to `file.md#anchor` (or `#anchor` in the same
file) must name a heading of that file (GitHub's slug) or an explicit `<a id="...">`. The README is the front
door: at most README_LINES lines. Links to the web are not followed (the check runs offline)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_LINES = 250
SKIP = {"target", "node_modules", "vendor", ".git", "fuzz"}
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")


def markdown_files(root=ROOT):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def prose(text):
    """The lines outside code fences, with their numbers (a link in a code sample is not a link)."""
    inside = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line.strip()):
            inside = not inside
        elif not inside:
            yield number, re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        text = open(path, encoding="utf-8").read()
        found, seen = set(), {}
        for _, line in prose(text):
            heading = re.match(r"^#{1,6}\s+(.*)$", line)
            if heading:
                base = slug(heading.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
            found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
        cache[path] = found
    return cache[path]


def problems(root=ROOT):
    for path in markdown_files(root):
        name = os.path.relpath(path, root)
        text = open(path, encoding="utf-8").read()
        for number, line in prose(text):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # the web, mail
                file_part, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if not os.path.exists(resolved):
                    yield f"{name}:{number}: {target}: no such file"
                elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                    yield f"{name}:{number}: {target}: no heading or anchor '{anchor}' there"
    lines = open(os.path.join(root, "README.md"), encoding="utf-8").read().rstrip("\n").count("\n") + 1
    if lines > README_LINES:
        yield f"README.md is {lines} lines: the front door stays under {README_LINES} (put the rest in docs/)"


def self_test():
    """The check finds what it is for: a missing file, a missing anchor, a long README; and passes the rest."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        good = "# Guide\n\n<a id=\"board\"></a>\n\n## The board, at a glance\n"
        open(os.path.join(root, "docs", "guide.md"), "w").write(good)
        links = [
            "[ok](docs/guide.md#board)",
            "[ok](docs/guide.md#the-board-at-a-glance)",
            "[ok](https://example.com/x)",
            "`[code](missing.md)`",
            "[bad](docs/missing.md)",
            "![bad](docs/missing.png)",
            "[bad](docs/guide.md#nowhere)",
        ]
        open(os.path.join(root, "README.md"), "w").write("\n".join(links + ["text"] * README_LINES) + "\n")
        found = list(problems(root))
        expected = ["docs/missing.md", "docs/missing.png", "#nowhere", "README.md is"]
        assert len(found) == len(expected) and all(any(e in f for f in found) for e in expected), found


if __name__ == "__main__":
    self_test()
    found = list(problems())
    for problem in found:
        print(problem)
    files = sum(1 for _ in markdown_files())
    print(f"docs: {files} Markdown files checked, {len(found)} problem(s)")
    sys.exit(1 if found else 0)
