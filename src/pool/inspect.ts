import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import type { Service } from "../config/registry.js";
import type { VendorTool } from "../config/tool-inspection.js";
import type { Logger } from "../log/logger.js";
import type { Connection } from "../store/records.js";
import type { Credential } from "../vault/credential.js";
import { ChildLedger } from "./child-ledger.js";
import { renderCredential } from "./credential-template.js";
import { ProductionLauncher, UidAllocator, type VendorLauncher } from "./launcher.js";

// One-off vendor starts for `registry inspect` and `registry check --inspect`: the broker's own
// launcher (allowlisted env, private HOME/TMPDIR, process group, child uid), not a second copy.

/** Most tools/list pages and tools read from one vendor: a vendor cannot make the CLI grow without end. */
export const MAX_TOOL_PAGES = 100;
/** Most tools kept from one vendor's tools/list; a list this long was cut short. */
export const MAX_TOOLS = 5_000;

/**
 * The production launcher as the CLI uses it: children under `<dataDir>/run/inspect` with their own
 * ledger (a running broker's sweep never sees them) and, when root with SLAUDE_CHILD_UID_BASE, the
 * uid just past the broker's range, so an inspected vendor never shares a uid with a live child.
 */
export function inspectionLauncher(config: Config, clock: Clock, log: Logger): VendorLauncher {
  const runDir = path.join(config.dataDir, "run", "inspect");
  const base = config.pool.childUidBase;
  const perChildUid = base !== undefined && process.geteuid?.() === 0;
  if (perChildUid) {
    // As in the broker: a child under its own uid must traverse to its private HOME.
    for (const d of [config.dataDir, path.dirname(runDir), runDir, path.join(runDir, "vendors")]) {
      mkdirSync(d, { recursive: true, mode: 0o711 });
      chmodSync(d, 0o711);
    }
  }
  return new ProductionLauncher({
    baseEnv: config.childBaseEnv,
    runDir: path.join(runDir, "vendors"),
    ledger: new ChildLedger(path.join(runDir, "children")),
    uids: perChildUid ? new UidAllocator(base + config.pool.maxChildren, 1) : undefined,
    clock,
    log,
  });
}

/** A throwaway connection record for inspecting `service` with a credential that is not stored. */
export function inspectionConnection(service: Service, now: number): Connection {
  return {
    id: `inspect_${randomBytes(8).toString("hex")}`,
    teamId: "(inspect)",
    ownerUserId: null,
    service: service.name,
    scope: "shared",
    channelId: null,
    threadTs: null,
    status: "active",
    sealed: null,
    label: null,
    createdBy: "cli:registry-inspect",
    createdAt: now,
    updatedAt: now,
    expiresAt: now + service.ttlMs,
    endedAt: null,
    endedReason: null,
  };
}

/** Starts the vendor, reads its whole tools/list (bounded), and stops it again, whatever happened. */
export async function listVendorTools(launcher: VendorLauncher, connection: Connection, service: Service, credential: Credential): Promise<VendorTool[]> {
  const handle = await launcher.launch(connection, service, renderCredential(service, credential));
  try {
    return await readToolList(handle.client);
  } finally {
    await handle.close();
  }
}

/** Every page of a started vendor's tools/list, up to MAX_TOOL_PAGES pages and MAX_TOOLS tools. */
export async function readToolList(client: Pick<Client, "listTools">): Promise<VendorTool[]> {
  const tools: VendorTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const res = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: 30_000 });
    for (const t of res.tools) {
      if (tools.length >= MAX_TOOLS) return tools;
      tools.push({ name: t.name, title: t.title, annotations: t.annotations });
    }
    cursor = res.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}
