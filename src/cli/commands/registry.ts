import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ConfigError } from "../../config/errors.js";
import { parseRegistry, type Service, type ServiceRegistry } from "../../config/registry.js";
import { registryJsonSchema } from "../../config/registry-json-schema.js";
import {
  compareTools,
  printableName,
  renderToolsBlock,
  suggestToolClass,
  type VendorTool,
} from "../../config/tool-inspection.js";
import { errorMessage } from "../../domain/errors.js";
import { inspectionConnection } from "../../pool/inspect.js";
import type { Connection } from "../../store/records.js";
import { bindingOf } from "../../vault/binding.js";
import { type Credential, credentialSchema } from "../../vault/credential.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTable } from "../format.js";
import { readSecretFromStdin } from "../stdin.js";
import { inspectVendor } from "./registry-inspect-run.js";
import { changes, decideCommand, PINS_HELP } from "./registry-pins.js";

/** Usage of `registry`, printed on a usage mistake and in the top-level help. */
export const REGISTRY_HELP = `slaude-connect registry <schema|check FILE|inspect SERVICE|changes|accept|reject>

  schema      Prints the JSON Schema of the service registry file.
  check FILE [--inspect [--service S] [--connection ID] [--field NAME] [--format token|json]]
              Validates a registry file and lists its services. With --inspect, also starts one
              service's vendor (S, or the connection's service, or the file's only service) with a
              credential as for inspect, warns about tools it offers that the entry does not
              classify, and fails (exit 1) when the entry names a tool the vendor lacks.
  inspect SERVICE [--connection ID] [--field NAME] [--format token|json]
              Starts SERVICE's vendor (from the configured registry) with a credential read from
              standard input (--format token: one value into field NAME, default the capture's
              first field or "token"; an oauth service gets it as its access token. --format json:
              a credential document) or the stored credential of connection ID, lists its tools
              with the class their annotations suggest, and prints a "tools" block to paste.
${PINS_HELP}`;

/** Reads and validates FILE itself (not the server's configured registry); every message names FILE. */
function readRegistryFile(ctx: CliContext, file: string): ServiceRegistry | number {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    ctx.err(`${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? errorMessage(e)})`);
    return 2;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    ctx.err(`${file}: not valid JSON: ${errorMessage(e)}`);
    return 1;
  }
  try {
    return parseRegistry(doc, file);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    // parseRegistry's lines already start with FILE: each names the bad path inside it.
    ctx.err(`${file}: not a valid service registry\n${e.message.replace(/^invalid service registry\n/, "")}`);
    return 1;
  }
}

const credentialOptions = {
  connection: { type: "string" },
  field: { type: "string" },
  format: { type: "string" },
} as const;

/** `registry schema|check|inspect`. */
export async function registryCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "schema" && rest.length === 0) {
    ctx.out(JSON.stringify(registryJsonSchema(), null, 2));
    return 0;
  }
  if (sub === "check") return check(ctx, rest);
  if (sub === "inspect") return inspect(ctx, rest);
  if (sub === "changes") return changes(ctx, rest);
  if (sub === "accept" || sub === "reject") return decideCommand(ctx, sub, rest);
  throw new UsageError(REGISTRY_HELP);
}

async function check(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { inspect: { type: "boolean" }, service: { type: "string" }, ...credentialOptions },
    strict: true,
    allowPositionals: true,
  });
  const [file] = positionals;
  if (!file || positionals.length > 1) throw new UsageError(REGISTRY_HELP);
  if (!values.inspect && (values.service ?? values.connection ?? values.field ?? values.format) !== undefined) {
    throw new UsageError("--service, --connection, --field and --format go with --inspect");
  }
  const reg = readRegistryFile(ctx, file);
  if (typeof reg === "number") return reg;
  for (const s of reg.list())
    ctx.out(
      `${s.name}: ${s.entry.transport.type}, capture ${s.entry.capture.strategy}, ttl ${Math.round(s.ttlMs / 60000)}m, ${Object.keys(s.entry.tools).length} classified tool(s)`,
    );
  ctx.out(`${file}: ok, ${reg.list().length} service(s)`);
  if (!values.inspect) return 0;

  const stored = values.connection === undefined ? undefined : await storedConnection(ctx, values.connection);
  if (stored === null) return 1;
  const name = values.service ?? stored?.service ?? (reg.list().length === 1 ? reg.list()[0]!.name : undefined);
  if (name === undefined) throw new UsageError(`--inspect: say which service of ${file} to start (--service S)`);
  const service = reg.get(name);
  if (!service) return unknownService(ctx, name, reg, file);
  const tools = await startAndList(ctx, service, values, stored);
  if (typeof tools === "number") return tools;
  const { unclassified, missing } = compareTools(Object.keys(service.entry.tools), tools);
  ctx.out(`${service.name}: the vendor offers ${tools.length} tool(s)`);
  for (const t of unclassified) {
    const words = service.entry.defaultToolClass.join(" ");
    ctx.out(
      `warning: ${service.name}: the vendor offers "${printableName(t)}", which the entry does not classify (it runs as the default class, ${words})`,
    );
  }
  for (const t of missing)
    ctx.out(
      `warning: ${service.name}: the entry classifies "${t}", which the vendor does not offer (misspelt or removed?)`,
    );
  if (missing.length) {
    ctx.err(`${file}: ${service.name} names ${missing.length} tool(s) the vendor lacks`);
    return 1;
  }
  return 0;
}

async function inspect(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: credentialOptions,
    strict: true,
    allowPositionals: true,
  });
  const [name] = positionals;
  if (!name || positionals.length > 1) throw new UsageError(REGISTRY_HELP);
  const reg = ctx.registry.registry;
  const service = reg.get(name);
  if (!service) return unknownService(ctx, name, reg, ctx.registry.path ?? "the service registry");
  const stored = values.connection === undefined ? undefined : await storedConnection(ctx, values.connection);
  if (stored === null) return 1;
  const tools = await startAndList(ctx, service, values, stored);
  if (typeof tools === "number") return tools;
  const suggestions = tools.map(suggestToolClass);
  const rows = suggestions.map((s) => [
    printableName(s.name),
    s.words.join(" "),
    service.isClassified(s.name) ? service.entry.tools[s.name]!.join(" ") : "-",
    s.reason,
  ]);
  ctx.out(`${service.name}: the vendor offers ${tools.length} tool(s)`);
  ctx.out(formatTable(["TOOL", "SUGGESTED", "REGISTRY", "WHY"], rows));
  for (const t of compareTools(Object.keys(service.entry.tools), tools).missing) {
    ctx.out(`warning: the registry classifies "${t}", which the vendor does not offer`);
  }
  ctx.out("");
  ctx.out(renderToolsBlock(suggestions).split("\n").map(printableName).join("\n"));
  return 0;
}

function unknownService(ctx: CliContext, name: string, reg: ServiceRegistry, where: string): number {
  const known = reg.list().map((s) => s.name);
  ctx.err(`unknown service "${name}" in ${where}${known.length ? ` (known: ${known.join(", ")})` : " (no services)"}`);
  return 1;
}

/** The live connection `id`, or null after saying why it cannot be used. */
async function storedConnection(ctx: CliContext, id: string): Promise<Connection | null> {
  const conn = await ctx.store.connections.get(id);
  if (!conn) {
    ctx.err(`no connection ${id}`);
    return null;
  }
  if (conn.status !== "active" || conn.expiresAt <= ctx.clock.now()) {
    ctx.err(`connection ${id} is ${conn.status === "active" ? "expired" : conn.status}; it cannot start a vendor`);
    return null;
  }
  return conn;
}

/**
 * Starts `service`'s vendor with the stored connection's credential (audited) or one read from
 * standard input, and returns its tools; the exit status after printing why it could not.
 */
async function startAndList(
  ctx: CliContext,
  service: Service,
  opts: { field?: string | undefined; format?: string | undefined },
  stored: Connection | undefined,
): Promise<VendorTool[] | number> {
  let credential: Credential;
  let connection: Connection;
  if (stored) {
    if (opts.field !== undefined || opts.format !== undefined)
      throw new UsageError("--field and --format describe standard input; --connection reads the stored credential");
    if (stored.service !== service.name) {
      ctx.err(`connection ${stored.id} is for ${stored.service}, not ${service.name}`);
      return 1;
    }
    credential = ctx.vault.openCredential(stored.sealed, bindingOf(stored));
    connection = stored;
    // Starting a vendor with someone's stored credential is an operator action on their connection.
    await ctx.store.audit.append([
      {
        at: ctx.clock.now(),
        event: "admin_action",
        teamId: stored.teamId,
        ownerUserId: stored.ownerUserId,
        connectionId: stored.id,
        service: service.name,
        decision: "registry_inspect",
        actor: `cli:${ctx.io.env.USER ?? "operator"}`,
      },
    ]);
  } else {
    const read = await credentialFromStdin(ctx, service, opts);
    if (!read) return 1;
    credential = read;
    connection = inspectionConnection(service, ctx.clock.now());
  }
  return inspectVendor(ctx, service, connection, credential);
}

async function credentialFromStdin(
  ctx: CliContext,
  service: Service,
  opts: { field?: string | undefined; format?: string | undefined },
): Promise<Credential | undefined> {
  const format = opts.format ?? "token";
  if (format !== "token" && format !== "json") throw new UsageError("--format is token or json");
  if (opts.field !== undefined && !/^[a-z][a-z0-9_]*$/.test(opts.field))
    throw new UsageError("--field is a lowercase name like token");
  if (ctx.io.stdin.isTTY) ctx.err(`Paste the ${service.displayName} credential, then press Enter and Ctrl-D:`);
  const secret = await readSecretFromStdin(ctx.io.stdin);
  if (!secret) {
    ctx.err("no credential on standard input (pipe one in, or pass --connection ID)");
    return undefined;
  }
  let doc: unknown;
  if (format === "json") {
    try {
      doc = JSON.parse(secret);
    } catch {
      ctx.err("standard input is not valid JSON");
      return undefined;
    }
  } else if (service.entry.capture.strategy === "oauth" && opts.field === undefined) {
    doc = { kind: "oauth", accessToken: secret };
  } else {
    const capture = service.entry.capture;
    const field = opts.field ?? (capture.strategy === "paste" ? capture.fields[0]?.name : undefined) ?? "token";
    doc = { kind: "fields", fields: { [field]: secret } };
  }
  const parsed = credentialSchema.safeParse(doc);
  if (!parsed.success) {
    // Only paths, never values: the document is a secret.
    ctx.err(
      `credential document is invalid at ${parsed.error.issues.map((i) => i.path.join(".") || "(root)").join(", ")}`,
    );
    return undefined;
  }
  return parsed.data;
}
