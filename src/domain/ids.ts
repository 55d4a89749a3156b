import { randomBytes } from "node:crypto";

/** A new opaque identifier with a readable prefix, e.g. `conn_3f…`. */
export function newId(prefix: "conn" | "grant" | "appr" | "login" | "call" | "card"): string {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}
