#!/usr/bin/env python3
"""The documented items of the crate, one per line: every page of `cargo doc` (modules, types,
traits, functions, macros) and every method, variant, field and associated item on it,
redirect pages left out. Comparing two runs shows whether a change altered the public API:

    cargo doc --no-deps --all-features
    scripts/public-items.py target/doc/sql_middleware > after.txt
    diff before.txt after.txt
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "target/doc/sql_middleware"
kinds = r"(struct|enum|trait|fn|type|macro|constant|static|union|derive|attr)\."
items = set()
for d, _, files in os.walk(root):
    for f in files:
        path = os.path.join(d, f)
        rel = os.path.relpath(path, root)
        if not f.endswith(".html") or rel.startswith("src/") or f == "all.html":
            continue
        if f != "index.html" and not re.match(kinds, f):
            continue
        text = open(path, encoding="utf-8", errors="ignore").read()
        if "<title>Redirection</title>" in text:
            continue
        items.add(rel)
        for m in re.findall(
            r'id="((?:method|tymethod|variant|structfield|associatedtype|associatedconstant)\.[^"]+)"',
            text,
        ):
            items.add(rel + "#" + m)
for i in sorted(items):
    print(i)
