#!/usr/bin/env python3
"""The command blocks of a Markdown file (README.md) and how tests/integration/docs_readme.sh treats
each, from the marker on the line before its fence (docs/development.md, "The README's
commands"):

    <!-- readme-test: run -->              run the block as a bash script
    <!-- readme-test: daemons -->          each line is a daemon, run until the end of the test
    <!-- readme-test: instead CMD... -->   too long or recursive in the suite: run CMD instead
    <!-- readme-test: paths [PATH...] -->  not run here (a cluster, a container engine, root
                                           under systemd): only checked for the paths it names

Every block fenced as `sh` needs a marker. In every block, a word that names a path inside the
checkout (relative, with a '/', its first part a file or folder git tracks at the top) must
exist, as must every PATH of a `paths` marker. Problems are printed and make the exit status 1; otherwise each block
is printed as one JSON object a line: {"line", "mode", "args", "text", "paths"} (the paths
checked).

usage: readme_blocks.py FILE CHECKOUT
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys

MARKER = re.compile(r"^<!--\s*readme-test:\s*(\S+)(.*?)\s*-->\s*$")
MODES = {"run", "daemons", "instead", "paths"}


def tracked_tops(checkout):
    """Top-level names git tracks; without git, what is there minus build and hidden folders."""
    try:
        out = subprocess.run(["git", "-C", checkout, "ls-files"], capture_output=True,
                             text=True, check=True).stdout
        return {line.split("/", 1)[0] for line in out.splitlines() if line}
    except (OSError, subprocess.CalledProcessError):
        return {n for n in os.listdir(checkout) if not n.startswith((".", "build"))}


def blocks(lines):
    """(fence line number, info string, marker line or None, text) of every fenced block."""
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start = i
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = lines[j] if j >= 0 and MARKER.match(lines[j]) else None
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        yield start + 1, fence.group(1), marker, "\n".join(body) + "\n"
        i += 1


def words(text):
    """The shell words of the block, comments dropped (quotes kept apart where they parse)."""
    out = []
    for line in text.splitlines():
        try:
            out += shlex.split(line, comments=True)
        except ValueError:  # an unbalanced quote across a continuation: split on blanks
            out += re.sub(r"\s#.*$", "", line).split()
    return out


def named_paths(text, tops):
    """Words (or the parts of NAME=VALUE words) that name a path inside the checkout: relative,
    with a '/', the first part tracked at the top. URLs and absolute paths are not the
    checkout's; a top-level file alone (Dockerfile) is named in the marker instead."""
    found = []
    for word in words(text):
        if "://" in word:
            continue
        for part in word.split("="):
            part = part.strip("\"'();|&")
            part = part[2:] if part.startswith("./") else part
            if "/" in part and not part.startswith(("/", "$", "-")) and part.split("/")[0] in tops:
                found.append(part)
    return found


def main():
    path, checkout = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    tops = tracked_tops(checkout)
    problems = []
    out = []
    for line, info, marker, text in blocks(lines):
        if marker is None:
            if info == "sh":
                problems.append(f"{path}:{line}: a sh block without a readme-test marker on "
                                "the line before it")
            continue
        m = MARKER.match(marker)
        mode, args = m.group(1), m.group(2).strip()
        if mode not in MODES:
            problems.append(f"{path}:{line}: unknown readme-test mode '{mode}' "
                            f"(one of {', '.join(sorted(MODES))})")
            continue
        if mode == "instead" and not args:
            problems.append(f"{path}:{line}: readme-test instead needs the command to run")
        named = named_paths(text, tops) + (args.split() if mode == "paths" else [])
        for p in named:
            if not glob.glob(os.path.join(checkout, p)):
                problems.append(f"{path}:{line}: names {p}, which does not exist")
        out.append({"line": line, "mode": mode, "args": args, "text": text, "paths": named})
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(1)
    for b in out:
        print(json.dumps(b))


if __name__ == "__main__":
    main()
