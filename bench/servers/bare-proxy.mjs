// A bare MCP SDK pass-through, the floor any HTTP→stdio proxy is measured against: Streamable HTTP
// in on 127.0.0.1, one stdio child per MCP session (as the broker keeps one child per connection),
// tools/list and tools/call forwarded as they are. Usage: node bare-proxy.mjs PORT VENDOR_SCRIPT
import { randomUUID } from "node:crypto";
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [port, vendor] = process.argv.slice(2);
const sessions = new Map();
let children = 0;

async function newSession() {
  const upstream = new Client({ name: "bare-proxy", version: "1" });
  await upstream.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [vendor],
      env: { PATH: process.env.PATH ?? "", VENDOR_TOKEN: `bare-${++children}` },
      stderr: "ignore",
    }),
  );
  const server = new Server({ name: "bare-proxy", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => upstream.listTools());
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) =>
    upstream.callTool(req.params, CallToolResultSchema, { signal: extra.signal }),
  );
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
    void upstream.close();
  };
  await server.connect(transport);
  return transport;
}

http
  .createServer(async (req, res) => {
    if (req.url === "/ping") return void res.end("ok");
    const id = req.headers["mcp-session-id"];
    const transport = typeof id === "string" ? sessions.get(id) : await newSession();
    if (!transport) return void res.writeHead(404).end();
    await transport.handleRequest(req, res);
  })
  .listen(Number(port), "127.0.0.1");
