import type { Service } from "../config/registry.js";
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
      if (names.length === 0)
        throw new PoolError("credential_incomplete", "credential template {{base64:…}} names no field");
      return Buffer.from(names.map((n) => lookup(vars, n)).join(":")).toString("base64");
    }
    return lookup(vars, expr);
  });
}

function lookup(vars: Record<string, string>, name: string): string {
  const v = vars[name];
  if (v === undefined)
    throw new PoolError(
      "credential_incomplete",
      `the stored credential has no "${name}" value required by the service registry`,
    );
  return v;
}

/** A credential rendered through the registry's templates once: what the vendor receives (its env, or one header). */
export type RenderedCredential =
  | { readonly kind: "env"; readonly env: Readonly<Record<string, string>> }
  | { readonly kind: "header"; readonly name: string; readonly value: string };

/** Renders every credential template of `service`'s transport; a missing variable throws `credential_incomplete`. */
export function renderCredential(service: Service, credential: Credential): RenderedCredential {
  const t = service.entry.transport;
  if (t.type === "http")
    return {
      kind: "header",
      name: t.credentialHeader.name,
      value: renderTemplate(t.credentialHeader.value, credential),
    };
  const env: Record<string, string> = {};
  for (const [name, template] of Object.entries(t.credentialEnv)) env[name] = renderTemplate(template, credential);
  return { kind: "env", env };
}

/** The rendered values a vendor sees: the redactor hides exactly these (and the raw fields). */
export function renderedValues(r: RenderedCredential): string[] {
  return r.kind === "env" ? Object.values(r.env) : [r.value];
}
