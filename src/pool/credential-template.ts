import type { Credential } from "../vault/credential.js";
import { credentialVariables } from "../vault/credential.js";
import { PoolError } from "./errors.js";

/**
 * Fills a registry credential template: `{{name}}` takes a credential variable, `{{base64:a:b}}`
 * the base64 of the named variables joined with ":" (HTTP Basic). A missing variable fails closed.
 */
export function renderTemplate(template: string, credential: Credential): string {
  const vars = credentialVariables(credential);
  return template.replace(/\{\{([a-z0-9_:]+)\}\}/gi, (_m, expr: string) => {
    const parts = expr.split(":");
    if (parts[0] === "base64") {
      const names = parts.slice(1);
      if (names.length === 0) throw new PoolError("credential_incomplete", "credential template {{base64:…}} names no field");
      return Buffer.from(names.map((n) => lookup(vars, n)).join(":")).toString("base64");
    }
    return lookup(vars, expr);
  });
}

function lookup(vars: Record<string, string>, name: string): string {
  const v = vars[name];
  if (v === undefined) throw new PoolError("credential_incomplete", `the stored credential has no "${name}" value required by the service registry`);
  return v;
}
