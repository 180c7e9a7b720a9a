"""An MCP client driving `ide mcp` as an agent's host does: it starts the
server as a subprocess, lists the tools, calls every family, and reports
what it saw as one JSON line on stdout. Driven by tests/mcp_e2e.rs, which
checks the report and what is left running afterwards.

    python3 mcp_client.py IDE_BINARY CONFIG ROOT
"""

import json
import re
import sys
import time
from datetime import timedelta

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def run(ide, config, root):
    report = {}
    params = StdioServerParameters(command=ide, args=["--config", config, "mcp"], cwd=root)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=60)) as s:
            init = await s.initialize()
            report["protocol"] = init.protocolVersion
            report["server"] = init.serverInfo.name

            listed = await s.list_tools()
            names = [t.name for t in listed.tools]
            report["tools"] = names
            for t in listed.tools:
                check(NAME.match(t.name), f"tool name {t.name!r}")
                schema = t.inputSchema
                check(schema.get("type") == "object", f"{t.name} input schema type")
                check(schema.get("additionalProperties") is False, f"{t.name} is not strict")
                check(t.description, f"{t.name} has no description")
                check(t.annotations is not None and t.annotations.readOnlyHint is not None,
                      f"{t.name} has no annotations")
            report["list_bytes"] = len(json.dumps(listed.model_dump(mode="json", exclude_none=True)))

            # one call of every family
            info = await s.call_tool("coder_info", {})
            check(not info.isError, text_of(info))
            report["mode"] = info.structuredContent["mode"]
            made = await s.call_tool("coder_create-file", {"files": [{"path": "src/a.py", "content": "x = 1\n"}]})
            check(not made.isError, text_of(made))
            revision = made.structuredContent["results"][0]["revision"]
            edited = await s.call_tool("coder_update-file", {"files": [{
                "path": "src/a.py", "expected_revision": revision,
                "ops": [{"op": "edit", "old_text": "x = 1", "new_text": "x = 2"}]}]})
            check(not edited.isError, text_of(edited))
            read = await s.call_tool("coder_read-file", {"path": "src/a.py"})
            check(read.structuredContent["content"] == "x = 2\n", text_of(read))
            found = await s.call_tool("coder_search", {"query": "x = 2"})
            check(not found.isError and "a.py" in text_of(found), text_of(found))
            ran = await s.call_tool("shell_exec", {"command": "echo", "args": ["hello"], "cwd": root})
            check(ran.structuredContent["stdout"] == "hello\n", text_of(ran))
            listing = await s.call_tool("shell_fs_ls", {"path": root})
            check(not listing.isError, text_of(listing))
            history = await s.call_tool("shell_turns_list", {})
            check(not history.isError, text_of(history))

            # errors: isError with the code; a denied path reads like a missing one
            stale = await s.call_tool("coder_update-file", {"files": [{
                "path": "src/a.py", "expected_revision": revision,
                "ops": [{"op": "edit", "old_text": "x = 2", "new_text": "x = 3"}]}]})
            check(stale.isError and text_of(stale).startswith("C221: "), text_of(stale))
            denied = await s.call_tool("coder_read-file", {"path": "denied/secret.txt"})
            missing = await s.call_tool("coder_read-file", {"path": "denied/absent.txt"})
            check(denied.isError and missing.isError, "denied or missing read answered")
            report["denied"] = text_of(denied).replace("secret.txt", "<P>")
            report["missing"] = text_of(missing).replace("absent.txt", "<P>")

            # 100 concurrent calls, all answered
            answers = []

            async def one(i):
                r = await s.call_tool("coder_read-file", {"path": "src/a.py"})
                answers.append(not r.isError)

            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(one, i)
            report["concurrent_ok"] = sum(answers)

            # a terminal session started, driven and stopped across calls
            started = await s.call_tool("shell_pty_start", {"cwd": root, "program": "/bin/sh"})
            check(not started.isError, text_of(started))
            sid = started.structuredContent["session_id"]
            key = started.structuredContent["access_key"]
            sent = await s.call_tool("shell_pty_send", {
                "session_id": sid, "access_key": key,
                "text": "echo pty-$((6*7))", "keys": ["enter"], "wait_ms": 10000, "until": "pty-42"})
            check(not sent.isError and "pty-42" in text_of(sent), text_of(sent))
            stopped = await s.call_tool("shell_pty_stop", {"session_id": sid, "access_key": key})
            check(not stopped.isError, text_of(stopped))

            # progress while a command runs, then the client cancels it
            progress = []

            async def on_progress(value, total, message):
                progress.append(value)

            pidfile = f"{root}/slow.pid"
            request_id = s._request_id
            cancelled = anyio.Event()

            async def slow():
                try:
                    await s.call_tool(
                        "shell_exec",
                        {"command": "sh", "timeout_ms": 120000,
                         "args": ["-c", f"sleep 300 & echo $$ $! > {pidfile}; wait"]},
                        progress_callback=on_progress)
                except BaseException:
                    pass
                cancelled.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                deadline = time.monotonic() + 30
                while not progress:
                    check(time.monotonic() < deadline, "no progress notification")
                    await anyio.sleep(0.05)
                with open(pidfile) as f:
                    report["cancelled_pids"] = [int(p) for p in f.read().split()]
                await s.send_notification(types.ClientNotification(types.CancelledNotification(
                    method="notifications/cancelled",
                    params=types.CancelledNotificationParams(requestId=request_id, reason="stopped"))))
                tg.cancel_scope.cancel()
            report["progress_notes"] = len(progress)

            # something left running when the client goes
            left = await s.call_tool("shell_pty_start", {"cwd": root, "program": "/bin/sh"})
            report["left_pid"] = left.structuredContent["pid"]
            bg = await s.call_tool("shell_exec_bg", {"command": "sleep", "args": ["300"]})
            check(not bg.isError, text_of(bg))
            report["left_job"] = bg.structuredContent["job_id"]
    print(json.dumps(report))


def main():
    ide, config, root = sys.argv[1:4]
    anyio.run(run, ide, config, root)


if __name__ == "__main__":
    main()
