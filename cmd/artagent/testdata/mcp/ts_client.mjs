// An independent MCP client: the official TypeScript SDK drives
// `artagent mcp` over stdio through a scripted fix of the Go project in
// WORKSPACE (Add returns a - b; its test wants a + b).
//
//   ART_MCP_TS_SDK=DIR  a directory where `npm install @modelcontextprotocol/sdk` ran
//   node ts_client.mjs ARTAGENT WORKSPACE TRANSCRIPT
//
// It checks what a stock client sees: tools/list shows the six tools with
// input and output schemas; an escape attempt (a path outside the
// workspace, a program given as a path, a cwd outside it) and a finish
// before verify are refused as isError results; read, replace, verify and
// finish succeed. It prints one line per check and exits non-zero at the
// first that fails.
import { createRequire } from "node:module";
import path from "node:path";

const sdk = process.env.ART_MCP_TS_SDK;
if (!sdk) {
  console.error("ts_client: ART_MCP_TS_SDK is not set");
  process.exit(2);
}
const require = createRequire(path.join(sdk, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const [artagent, workspace, transcript] = process.argv.slice(2);
if (!artagent || !workspace || !transcript) {
  console.error("usage: node ts_client.mjs ARTAGENT WORKSPACE TRANSCRIPT");
  process.exit(2);
}

function check(ok, what, detail) {
  if (!ok) {
    console.error(`FAIL ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

const transport = new StdioClientTransport({
  command: artagent,
  args: [
    "mcp", "--workspace", workspace, "--allow", "cat", "--allow", "go",
    "--verify", "go test ./...", "--env", "GOCACHE", "--env", "GOPATH",
    "--env", "GOFLAGS", "--env", "GOTOOLCHAIN", "--transcript", transcript,
  ],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "art-ts-check", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(JSON.stringify(names) === JSON.stringify(["finish", "read_file", "replace_text", "run_tool", "status", "verify"]), "tools/list shows the six tools", names);
for (const t of tools) {
  check(t.inputSchema && t.inputSchema.type === "object", `${t.name} has an object input schema`, t.inputSchema);
  check(t.outputSchema && t.outputSchema.type === "object", `${t.name} has an object output schema`, t.outputSchema);
}
const rt = tools.find((t) => t.name === "run_tool");
check(JSON.stringify([...rt.inputSchema.required].sort()) === JSON.stringify(["args", "program"]), "run_tool requires program and args", rt.inputSchema.required);

const call = (name, args) => client.callTool({ name, arguments: args });

let r = await call("read_file", { path: "../../../../etc/passwd" });
check(r.isError === true && r.structuredContent.refusal === "path", "read_file outside the workspace is refused", r);
r = await call("run_tool", { program: "/bin/sh", args: ["-c", "id"] });
check(r.isError === true && r.structuredContent.refusal === "program", "run_tool of a program path is refused", r);
r = await call("run_tool", { program: "cat", args: ["go.mod"], cwd: "../.." });
check(r.isError === true, "run_tool with a cwd outside the workspace is refused", r);

r = await call("read_file", { path: "calc.go" });
check(!r.isError && text(r).includes("return a - b"), "read_file shows the bug", text(r));
r = await call("replace_text", { path: "calc.go", old: "return a - b", new: "return a + b" });
check(!r.isError && r.structuredContent.debt === true && r.structuredContent.edit.line > 0, "replace_text edits and opens debt", r.structuredContent);
r = await call("finish", { summary: "fixed Add" });
check(r.isError === true && r.structuredContent.refusal === "debt", "finish before verify is refused", r);
r = await call("status", {});
check(r.structuredContent.debt === true && r.structuredContent.edits === 1, "status shows the open debt", r.structuredContent);
r = await call("verify", {});
check(!r.isError && r.structuredContent.passed === true && r.structuredContent.debt === false, "verify passes and clears the debt", r);
const res = await client.readResource({ uri: "art://verify/last" });
check(res.contents[0].text.includes("go test"), "art://verify/last holds the verify output", res.contents[0].text);
r = await call("finish", { summary: "fixed Add" });
check(!r.isError && r.structuredContent.outcome === "finished" && r.structuredContent.verified === true, "finish after verify is accepted", r);
r = await call("read_file", { path: "calc.go" });
check(r.isError === true && r.structuredContent.status === "finished", "an action after finish is refused", r);

await client.close();
console.log("ts_client: all checks passed");
