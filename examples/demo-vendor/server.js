#!/usr/bin/env node
// The demo vendor: a small notes service as a real MCP server over stdio, on the MCP SDK. It exists
// so a first start of slaude-connect has a service to connect (see docs/service-registry.md).
//
// It makes identity visible: the token it is started with names its owner ("demo-alice-..." is
// Alice's), `whoami` answers with that name, and each token has its own notes. Notes live in the
// connection's private HOME, which the broker makes per vendor child and removes when the child
// stops: they last as long as the child does.
//
// Env: DEMO_VENDOR_TOKEN (required; the broker fills it from the connection's pasted token).
// Plain JavaScript, so it runs with `node` from the package: no build step, no tsx.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import * as z from "zod";

/** What a demo token looks like: `demo-<name>-<secret>`; the name is the account's owner. */
export const TOKEN_PATTERN = /^demo-([a-z][a-z0-9]{0,31})-([A-Za-z0-9]{6,128})$/;

const token = process.env.DEMO_VENDOR_TOKEN ?? "";
const match = TOKEN_PATTERN.exec(token);
if (!match) {
  // Never echo the value: it is a credential.
  process.stderr.write("demo-vendor: DEMO_VENDOR_TOKEN is missing or not of the form demo-<name>-<secret>\n");
  process.exit(1);
}
const owner = match[1];

// One file per token, named by the token's hash (never the token itself), in the private HOME.
const notesDir = path.join(os.homedir(), ".demo-vendor");
const notesFile = path.join(notesDir, `${createHash("sha256").update(token).digest("hex").slice(0, 32)}.json`);
const MAX_NOTES = 200;

const noteSchema = z.object({ id: z.string(), title: z.string(), body: z.string(), createdAt: z.string() }).strict();
const notesSchema = z.array(noteSchema).max(MAX_NOTES);

function readNotes() {
  let text;
  try {
    text = readFileSync(notesFile, "utf8");
  } catch (err) {
    if (err.code === "ENOENT") return [];
    throw err;
  }
  return notesSchema.parse(JSON.parse(text));
}

function writeNotes(notes) {
  mkdirSync(notesDir, { recursive: true, mode: 0o700 });
  const tmp = `${notesFile}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(notes), { mode: 0o600 });
  renameSync(tmp, notesFile);
}

function json(value) {
  return { content: [{ type: "text", text: JSON.stringify(value) }] };
}

function refusal(message) {
  return { content: [{ type: "text", text: message }], isError: true };
}

const server = new McpServer({ name: "slaude-demo-vendor", version: "1.0.0" });

server.registerTool(
  "whoami",
  {
    title: "Who am I",
    description: "Names the account this connection's token belongs to (never the token).",
    inputSchema: z.object({}).strict(),
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  () => json({ account: owner, notes: readNotes().length }),
);

server.registerTool(
  "list_notes",
  {
    title: "List notes",
    description: "Lists this account's notes (id and title).",
    inputSchema: z.object({}).strict(),
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  () => json({ account: owner, notes: readNotes().map((n) => ({ id: n.id, title: n.title })) }),
);

server.registerTool(
  "get_note",
  {
    title: "Get a note",
    description: "Reads one of this account's notes.",
    inputSchema: z.object({ id: z.string().min(1).max(64) }).strict(),
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  ({ id }) => {
    const note = readNotes().find((n) => n.id === id);
    return note ? json({ account: owner, note }) : refusal(`no note ${id}`);
  },
);

server.registerTool(
  "add_note",
  {
    title: "Add a note",
    description: "Adds a note to this account.",
    inputSchema: z.object({ title: z.string().min(1).max(200), body: z.string().max(10_000).default("") }).strict(),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  ({ title, body }) => {
    const notes = readNotes();
    if (notes.length >= MAX_NOTES) return refusal(`this account already has ${MAX_NOTES} notes`);
    const note = { id: `n-${randomBytes(4).toString("hex")}`, title, body, createdAt: new Date().toISOString() };
    writeNotes([...notes, note]);
    return json({ account: owner, added: note });
  },
);

server.registerTool(
  "delete_note",
  {
    title: "Delete a note",
    description: "Deletes one of this account's notes.",
    inputSchema: z.object({ id: z.string().min(1).max(64) }).strict(),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  },
  ({ id }) => {
    const notes = readNotes();
    const rest = notes.filter((n) => n.id !== id);
    if (rest.length === notes.length) return refusal(`no note ${id}`);
    writeNotes(rest);
    return json({ account: owner, deleted: id });
  },
);

await server.connect(new StdioServerTransport());
