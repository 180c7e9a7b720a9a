// The Node MCP client (@modelcontextprotocol/sdk, pinned in package.json)
// driving `ide mcp` over stdio: it lists the tools and uses the read and
// edit tools, and prints what it saw as one JSON line. Driven by
// tests/mcp_e2e.rs.
//
//     node mcp_client.mjs IDE_BINARY CONFIG ROOT

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [ide, config, root] = process.argv.slice(2);

function check(condition, what) {
  if (!condition) throw new Error(what);
}

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");

const transport = new StdioClientTransport({ command: ide, args: ["--config", config, "mcp"], cwd: root, stderr: "ignore" });
const client = new Client({ name: "ide-e2e", version: "1.0.0" });
await client.connect(transport);
const report = {};
const { tools } = await client.listTools();
report.tools = tools.length;
for (const t of tools) {
  check(/^[a-zA-Z0-9_-]{1,64}$/.test(t.name), `tool name ${t.name}`);
  check(t.inputSchema.type === "object", `${t.name} input schema`);
}
const made = await client.callTool({ name: "coder_create-file", arguments: { files: [{ path: "n.txt", content: "alpha\nbeta\n" }] } });
check(!made.isError, text(made));
const revision = made.structuredContent.results[0].revision;
const edited = await client.callTool({
  name: "coder_update-file",
  arguments: { files: [{ path: "n.txt", expected_revision: revision, ops: [{ op: "edit", old_text: "beta", new_text: "gamma" }] }] },
});
check(!edited.isError, text(edited));
const read = await client.callTool({ name: "coder_read-file", arguments: { path: "n.txt", numbered: true } });
check(!read.isError, text(read));
report.content = read.structuredContent.content;
const stale = await client.callTool({
  name: "coder_update-file",
  arguments: { files: [{ path: "n.txt", expected_revision: revision, ops: [{ op: "edit", old_text: "gamma", new_text: "delta" }] }] },
});
report.stale = text(stale).slice(0, 5);
report.stale_is_error = stale.isError === true;
const found = await client.callTool({ name: "coder_search", arguments: { query: "gamma" } });
report.found = found.structuredContent.content_matches.length;
await client.close();
console.log(JSON.stringify(report));
