"""The oracle for Python definitions: every def, async def and class at
any depth that Python's own `ast` finds, as JSON lines
{"file": path, "defs": [[name, line], ...]}, for the .py files under a
folder (every `step`-th one, in sorted order). Files `ast` cannot parse
are left out (they are not Python this interpreter reads)."""
import ast
import json
import os
import sys
import warnings

root, step = sys.argv[1], int(sys.argv[2])
files = []
for d, subdirs, names in os.walk(root):
    subdirs.sort()
    for n in sorted(names):
        if n.endswith(".py"):
            files.append(os.path.join(d, n))
warnings.simplefilter("ignore")
for f in files[::step]:
    try:
        with open(f, "rb") as h:
            tree = ast.parse(h.read(), f)
    except (SyntaxError, ValueError, UnicodeDecodeError):
        continue
    defs = [
        [n.name, n.lineno]
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    print(json.dumps({"file": f, "defs": defs}))
