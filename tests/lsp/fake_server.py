#!/usr/bin/env python3
"""A language server that misbehaves on purpose, for ide's fault tests.

Usage: fake_server.py MODE [PIDFILE]

It speaks just enough LSP: initialize, didOpen/didChange (publishing one
diagnostic per line holding "ERROR", for the version it got), hover,
definition (r1.txt, secret.txt and a file outside the root), rename,
shutdown/exit. MODE picks the fault:

- ok:           behaves.
- hang:         never answers hover (and ignores $/cancelRequest).
- cancel:       never answers hover by itself, but answers a cancellation.
- garbage:      writes a line that is not LSP when asked for hover.
- exit:         exits at once, before initialize.
- die-on-hover: exits (status 3) when asked for hover, mid-request.
- rename-bad:   answers rename with edits whose third file's range is past its end.
- rename-secret: answers rename with a fourth file named secret.txt.
- progress:     reports "Indexing" (40%) from its start on, never ending, and
                answers hover after 3 s.
- busy:         reports "Indexing" (40%) from its start; the first hover is
                answered empty, then the indexing ends 1 s later; later
                hovers are answered.

PIDFILE, when given, receives its pid (so a test can kill -9 it), and
PIDFILE.hover is created when a hover request arrives (so a test knows the
request is in flight).
"""

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
PIDFILE = sys.argv[2] if len(sys.argv) > 2 else None
if PIDFILE:
    with open(PIDFILE, "w") as f:
        f.write(str(os.getpid()))
    with open(PIDFILE + ".cache", "w") as f:
        f.write(os.environ.get("XDG_CACHE_HOME", ""))

inp = sys.stdin.buffer
out = sys.stdout.buffer
docs = {}


def send(msg):
    body = json.dumps(msg).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    return json.loads(inp.read(length))


def publish(uri, version, text):
    diags = []
    for i, l in enumerate(text.split("\n")):
        col = l.find("ERROR")
        if col >= 0:
            diags.append({
                "range": {"start": {"line": i, "character": col},
                          "end": {"line": i, "character": col + 5}},
                "severity": 1, "code": "E1", "source": "fake",
                "message": "ERROR found"})
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": diags}})


if MODE == "exit":
    sys.stderr.write("fake server: refusing to start\n")
    sys.exit(7)

while True:
    m = read()
    method = m.get("method")
    mid = m.get("id")
    p = m.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"capabilities": {
            "positionEncoding": "utf-16", "textDocumentSync": 1,
            "hoverProvider": True, "definitionProvider": True, "renameProvider": True}}})
    elif method == "initialized" and MODE in ("progress", "busy"):
        send({"jsonrpc": "2.0", "id": "p1", "method": "window/workDoneProgress/create",
              "params": {"token": "idx"}})
        send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "idx",
              "value": {"kind": "begin", "title": "Indexing", "percentage": 40}}})
    elif method == "textDocument/didOpen":
        d = p["textDocument"]
        docs[d["uri"]] = d["text"]
        publish(d["uri"], d["version"], d["text"])
    elif method == "textDocument/didChange":
        d = p["textDocument"]
        docs[d["uri"]] = p["contentChanges"][-1]["text"]
        publish(d["uri"], d["version"], docs[d["uri"]])
    elif method == "textDocument/hover":
        if PIDFILE:
            open(PIDFILE + ".hover", "w").close()
        if MODE == "hang":
            continue
        if MODE == "cancel":
            continue
        if MODE == "garbage":
            out.write(b"this is not LSP\r\n\r\n")
            out.flush()
            continue
        if MODE == "die-on-hover":
            os._exit(3)
        if MODE == "progress":
            time.sleep(3)
        if MODE == "busy" and not docs.get("indexed"):
            docs["indexed"] = True
            send({"jsonrpc": "2.0", "id": mid, "result": None})
            time.sleep(1)
            send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "idx",
                  "value": {"kind": "end"}}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "contents": {"kind": "markdown", "value": "fake hover"}}})
    elif method == "textDocument/definition":
        # one place inside the root, one in a protected file, one outside
        base = p["textDocument"]["uri"].rsplit("/", 1)[0]
        at = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}
        send({"jsonrpc": "2.0", "id": mid, "result": [
            {"uri": base + "/r1.txt", "range": at},
            {"uri": base + "/secret.txt", "range": at},
            {"uri": "file:///usr/include/stdio.h", "range": at}]})
    elif method == "$/cancelRequest":
        if MODE == "cancel":
            send({"jsonrpc": "2.0", "id": p["id"],
                  "error": {"code": -32800, "message": "cancelled"}})
    elif method == "textDocument/rename":
        uri = p["textDocument"]["uri"]
        base = uri.rsplit("/", 1)[0]
        changes = {}
        names = ["r1.txt", "r2.txt", "r3.txt", "r4.txt"]
        if MODE == "rename-secret":
            names[3] = "secret.txt"
        for i, name in enumerate(names):
            line = 99 if (MODE == "rename-bad" and i == 2) else 0
            changes[base + "/" + name] = [{
                "range": {"start": {"line": line, "character": 0},
                          "end": {"line": line, "character": 3}},
                "newText": p["newName"]}]
        send({"jsonrpc": "2.0", "id": mid, "result": {"changes": changes}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": mid, "result": None})
    elif method == "exit":
        sys.exit(0)
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": None})
