// A Node MCP host in miniature: connects to a running tabwarden console with
// the official TypeScript SDK over Streamable HTTP and a bearer token, lists
// the tools and calls browser_tabs, and prints what it got as one JSON
// object on stdout. It proves the console works with hosts other than the
// Go SDK (agent/mcpserver/node_test.go runs it).
//
// Usage: node client.mjs [URL TOKEN] [review|review-no-reset]
// Without URL and TOKEN it reads TABWARDEN_MCP_URL and TABWARDEN_MCP_TOKEN,
// then the console's endpoint file ($XDG_RUNTIME_DIR/tabwarden/mcp.json).
//
// review: calls browser_open the way hosts with a short request timeout do
// (10 s, resetTimeoutOnProgress: true) and prints the result with the
// progress notifications it saw; a review longer than 10 s completes only
// if the console sends progress while it waits. review-no-reset is the same
// call without resetTimeoutOnProgress: it times out at 10 s.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const mode = process.argv[4] ?? "";

function endpoint() {
  const [url, token] = process.argv.slice(2);
  if (url && token) return { url, token };
  if (process.env.TABWARDEN_MCP_URL && process.env.TABWARDEN_MCP_TOKEN) {
    return { url: process.env.TABWARDEN_MCP_URL, token: process.env.TABWARDEN_MCP_TOKEN };
  }
  const dir = process.env.XDG_RUNTIME_DIR
    ? join(process.env.XDG_RUNTIME_DIR, "tabwarden")
    : join(tmpdir(), `tabwarden-${process.getuid()}`);
  const ep = JSON.parse(readFileSync(join(dir, "mcp.json"), "utf8"));
  return { url: ep.url, token: ep.token };
}

async function main() {
  const { url, token } = endpoint();
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "node-mcp-client", version: "1.0.0" });
  await client.connect(transport);
  try {
    if (mode === "review" || mode === "review-no-reset") {
      process.stdout.write(JSON.stringify(await review(client, transport, mode === "review")) + "\n");
      return;
    }
    const { tools } = await client.listTools();
    const tabs = await client.callTool({ name: "browser_tabs", arguments: {} });
    const out = {
      sessionId: transport.sessionId ?? null,
      tools: tools.map((t) => ({
        name: t.name,
        readOnlyHint: t.annotations?.readOnlyHint ?? false,
        hasSchema: t.inputSchema?.type === "object",
      })),
      browserTabs: {
        isError: tabs.isError ?? false,
        text: tabs.content?.[0]?.text ?? null,
        structuredContent: tabs.structuredContent ?? null,
      },
    };
    process.stdout.write(JSON.stringify(out) + "\n");
  } finally {
    // Ends the MCP session (DELETE) so its conversation ends with it.
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

// review calls browser_open with a 10 s request timeout, reset by progress
// when reset is true.
async function review(client, transport, reset) {
  const progress = [];
  const started = Date.now();
  try {
    const res = await client.callTool(
      { name: "browser_open", arguments: { url: "https://shop.test/" } },
      undefined,
      {
        timeout: 10000,
        resetTimeoutOnProgress: reset,
        onprogress: (p) => progress.push({ progress: p.progress, message: p.message ?? "", atMs: Date.now() - started }),
      },
    );
    return {
      sessionId: transport.sessionId ?? null,
      review: { isError: res.isError ?? false, text: res.content?.[0]?.text ?? null, elapsedMs: Date.now() - started, progress },
    };
  } catch (err) {
    return {
      sessionId: transport.sessionId ?? null,
      review: { error: String(err?.message ?? err), code: err?.code ?? null, elapsedMs: Date.now() - started, progress },
    };
  }
}

main().catch((err) => {
  process.stderr.write(`node-mcp-client: ${err?.stack ?? err}\n`);
  process.exit(1);
});
