#!/usr/bin/env python3
"""Fails when a source file under the given directories reaches LibTorch through its includes.

The tools layer and the server are LibTorch-free by design (docs/architecture.md): they talk to
the simulator through plain result structs, and a translation unit that includes LibTorch takes
about 9 s to compile. This follows the project's own #include "..." lines from each file and
reports the chain that ends in <torch/...>, <ATen/...> or <c10/...>.

Usage: check_torch_free.py SOURCE_ROOT DIR...
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)
TORCH = ("torch/", "ATen/", "c10/")


def includes(root, path, cache):
    if path not in cache:
        try:
            with open(os.path.join(root, path), encoding="utf-8") as source:
                text = source.read()
        except OSError:
            text = ""
        cache[path] = INCLUDE.findall(text)
    return cache[path]


def torch_chain(root, path, cache, seen):
    """The include chain from `path` to a LibTorch header, or None."""
    for kind, name in includes(root, path, cache):
        if kind == "<":
            if name.startswith(TORCH):
                return [path, "<" + name + ">"]
            continue
        if name in seen or not os.path.exists(os.path.join(root, name)):
            continue
        seen.add(name)
        chain = torch_chain(root, name, cache, seen)
        if chain:
            return [path] + chain
    return None


def main():
    root, directories = sys.argv[1], sys.argv[2:]
    cache, problems = {}, []
    for directory in directories:
        for base, _, files in os.walk(os.path.join(root, directory)):
            if "node_modules" in base:
                continue
            for name in sorted(files):
                if not name.endswith((".cpp", ".h")):
                    continue
                path = os.path.relpath(os.path.join(base, name), root)
                chain = torch_chain(root, path, cache, set())
                if chain:
                    problems.append(" -> ".join(chain))
    for problem in problems:
        print("LibTorch reached from a LibTorch-free layer: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
