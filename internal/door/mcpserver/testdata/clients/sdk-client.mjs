// A person's MCP client, written with the official TypeScript SDK: it starts `tandem mcp` over stdio
// and works through a task whose approvals and question it answers the way a person would, reading
// what each form says. It prints what it saw as one JSON object; the Go test
// (cmd/tandem TestMCPTypeScriptSDKClientOverStdio) checks it against the server's REST API.
//
// usage: node sdk-client.mjs TANDEM_BINARY PROJECT_DIR DATA_DIR PORT
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, project, data, port] = process.argv.slice(2);
const seen = { elicitations: [], progress: [], calls: [] };

const client = new Client({ name: "ts-sdk-person", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const { message, requestedSchema } = req.params;
  seen.elicitations.push({ message, sessionId: req.params._meta?.sessionId, fields: Object.keys(requestedSchema.properties) });
  const decision = requestedSchema.properties.decision;
  if (decision) {
    // An approval: the person allows the harmless echo and refuses to delete the build.
    const offered = decision.oneOf.map((o) => o.const);
    if (message.includes("rm -rf")) return { action: "accept", content: { decision: "reject", message: "keep the build directory" } };
    if (!offered.includes("once")) return { action: "decline" };
    return { action: "accept", content: { decision: "once" } };
  }
  // A question: the person picks the option whose title mentions SQLite.
  const q0 = requestedSchema.properties.q0;
  const pick = q0.oneOf.find((o) => o.title.includes("SQLite"));
  return { action: "accept", content: { q0: pick.const } };
});

const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--dir", project, "--data-dir", data, "--port", port],
  env: { ...process.env, XDG_STATE_HOME: data, XDG_CONFIG_HOME: data, HOME: data },
  stderr: "inherit",
});
await client.connect(transport);

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, {
    timeout: 60_000,
    onprogress: (p) => seen.progress.push(p.message),
  });
  seen.calls.push({ name, structured: res.structuredContent, text: res.content?.[0]?.text, isError: !!res.isError });
  return res.structuredContent;
}

const started = await call("tandem", { prompt: "run: echo from-the-ts-sdk" });
await call("tandem-reply", { sessionId: started.sessionId, prompt: "run: rm -rf build" });
await call("tandem-reply", { sessionId: started.sessionId, prompt: "ask: Which database? | Postgres | SQLite" });
await call("tandem-sessions", {});
seen.tools = (await client.listTools()).tools.map((t) => t.name);
await client.close();
process.stdout.write(JSON.stringify(seen) + "\n");
