import type http from "node:http";
import type { z } from "zod";
import { BodyTooLargeError, readBody } from "../server/host-auth.js";
import { sendJson } from "../server/http-server.js";
import type { ConsoleWorkspace } from "./ports.js";

// Small HTTP helpers of the console API: strict bodies and query strings, one error shape.

/** The console API's refusal: a code and one sentence for the page to show. */
export function refuse(res: http.ServerResponse, status: number, code: string, message: string): void {
  sendJson(res, status, { error: code, message });
}

/** Reads a JSON body (at most 64 KiB) and parses it with `schema`; answers 400/413 itself on failure. */
export async function jsonBody<T>(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  schema: z.ZodType<T>,
): Promise<T | undefined> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readBody(req, 64 << 10));
  } catch (err) {
    if (err instanceof BodyTooLargeError) refuse(res, 413, "too_large", "The request is too large.");
    else refuse(res, 400, "invalid_json", "The request body is not JSON.");
    return undefined;
  }
  return parsed(res, schema, doc);
}

/** Parses the query string with `schema` (each parameter once). */
export function query<T>(res: http.ServerResponse, url: URL, schema: z.ZodType<T>): T | undefined {
  // A Map, not an object's keys: "toString" or "__proto__" is a parameter like any other.
  const doc = new Map<string, string>();
  for (const [k, v] of url.searchParams) {
    if (doc.has(k)) {
      refuse(res, 400, "invalid_request", `Query parameter ${k} is repeated.`);
      return undefined;
    }
    doc.set(k, v);
  }
  return parsed(res, schema, Object.fromEntries(doc));
}

function parsed<T>(res: http.ServerResponse, schema: z.ZodType<T>, doc: unknown): T | undefined {
  const r = schema.safeParse(doc);
  if (r.success) return r.data;
  refuse(
    res,
    400,
    "invalid_request",
    r.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; "),
  );
  return undefined;
}

/** Whether `userId` is a person of the workspace; answers 404 itself when not. */
export async function knownUser(
  workspace: Pick<ConsoleWorkspace, "users">,
  res: http.ServerResponse,
  userId: string,
): Promise<boolean> {
  if ((await workspace.users()).some((u) => u.id === userId)) return true;
  refuse(res, 404, "unknown_user", `There is no user ${userId} in this workspace.`);
  return false;
}
