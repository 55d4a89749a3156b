// The bench's vendor: a plain-JavaScript MCP server over stdio (no tsx, so every path pays the same
// spawn). `echo` answers at once; `slow` holds the child busy for `ms` (the overload case);
// `big` returns `bytes` of text (the hygiene case). Its identity is VENDOR_TOKEN, as a real vendor's.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "bench-echo", version: "1.0.0" });
const who = process.env.VENDOR_TOKEN ? "token-holder" : "nobody";
server.registerTool(
  "echo",
  { description: "Echoes its text.", inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
  async ({ text }) => ({
    content: [{ type: "text", text: `${who}: ${text}` }],
  }),
);
server.registerTool(
  "slow",
  {
    description: "Answers after ms milliseconds.",
    inputSchema: { ms: z.number().int().min(0).max(60_000) },
    annotations: { readOnlyHint: true },
  },
  async ({ ms }) => {
    await new Promise((r) => setTimeout(r, ms));
    return { content: [{ type: "text", text: `slept ${ms}` }] };
  },
);
server.registerTool(
  "big",
  {
    description: "Returns bytes of text.",
    inputSchema: { bytes: z.number().int().min(1).max(10_000_000) },
    annotations: { readOnlyHint: true },
  },
  async ({ bytes }) => ({
    content: [{ type: "text", text: "lorem ipsum dolor sit amet\n".repeat(Math.ceil(bytes / 27)).slice(0, bytes) }],
  }),
);
await server.connect(new StdioServerTransport());
