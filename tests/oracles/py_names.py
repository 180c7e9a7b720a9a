"""The oracle for occurrences: for each file given, every NAME token
Python's `tokenize` yields (never a comment or a string), as JSON lines
{"file": path, "names": [[text, line, column], ...]} with 1-based lines
and 1-based byte columns."""
import json
import sys
import tokenize

for f in sys.argv[1:]:
    try:
        with open(f, "rb") as h:
            toks = list(tokenize.tokenize(h.readline))
        with open(f, "rb") as h:
            lines = h.read().split(b"\n")
    except (SyntaxError, tokenize.TokenError, UnicodeDecodeError):
        continue
    names = []
    for t in toks:
        if t.type == tokenize.NAME:
            row, col = t.start
            # tokenize counts characters; the answers count bytes
            line = lines[row - 1].decode("utf-8", "replace")
            col_bytes = len(line[:col].encode("utf-8"))
            names.append([t.string, row, col_bytes + 1])
    print(json.dumps({"file": f, "names": names}))
