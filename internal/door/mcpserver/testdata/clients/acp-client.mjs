// An editor written with the official ACP TypeScript SDK (@agentclientprotocol/sdk): it starts
// `tandem acp` over stdio and works through a task whose approvals it answers the way a person
// would, by the kind of each option. It prints what it saw as one JSON object; the Go test
// (cmd/tandem TestACPTypeScriptSDKClientOverStdio) checks it against what is on disk.
//
// Over the network it speaks ACP's Streamable HTTP transport (the SDK's experimental http client)
// to a running server's /acp endpoint, with the server's Basic credentials.
//
// usage: node acp-client.mjs TANDEM_BINARY PROJECT_DIR DATA_DIR PORT
//        node acp-client.mjs http://HOST:PORT/acp PROJECT_DIR   (password in TANDEM_SERVER_PASSWORD)
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";

const [bin, project, data, port] = process.argv.slice(2);
const seen = { permissions: [], updates: [], stops: [] };

let agent, stream;
if (bin.startsWith("http")) {
  const basic = Buffer.from(`tandem:${process.env.TANDEM_SERVER_PASSWORD}`).toString("base64");
  stream = createHttpStream(bin, { headers: { Authorization: `Basic ${basic}` } });
} else {
  agent = spawn(bin, ["acp", "--dir", project, "--data-dir", data, "--port", port], {
    env: { ...process.env, XDG_STATE_HOME: data, XDG_CONFIG_HOME: data, HOME: data },
    stdio: ["pipe", "pipe", "inherit"],
  });
  stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
}

const app = client({ name: "ts-sdk-editor" })
  .onRequest("session/request_permission", async ({ params }) => {
    const title = params.toolCall.title ?? "";
    seen.permissions.push({ title, options: params.options.map((o) => `${o.optionId}:${o.kind}`) });
    // The person allows the write and refuses to delete the build directory.
    const kind = title.includes("rm -rf") ? "reject_once" : "allow_once";
    const option = params.options.find((o) => o.kind === kind);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onNotification("session/update", async ({ params }) => {
    seen.updates.push(params.update);
  });

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "ts-sdk-editor", version: "1.0.0" },
  });
  seen.agent = init.agentInfo;
  seen.loadSession = init.agentCapabilities?.loadSession ?? false;
  const session = await ctx.request("session/new", { cwd: project, mcpServers: [] });
  seen.sessionId = session.sessionId;
  seen.modes = session.modes.availableModes.map((m) => m.id);
  for (const text of ["write: hello.txt\nfrom the TypeScript SDK\n", "run: rm -rf build"]) {
    const res = await ctx.request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text }] });
    seen.stops.push(res.stopReason);
  }
});
if (agent) {
  agent.stdin.end();
  await new Promise((resolve) => agent.once("exit", resolve));
}
console.log(JSON.stringify(seen));
