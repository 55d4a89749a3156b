import { randomBytes } from "node:crypto";
import type { Client } from "@modelcontextprotocol/client";
import type { Service } from "../config/registry.js";
import type { VendorTool } from "../config/tool-inspection.js";
import type { Connection } from "../store/records.js";
import type { Credential } from "../vault/credential.js";
import { renderCredential } from "./credential-template.js";
import type { VendorLauncher } from "./launcher.js";
import { listAllTools } from "./tool-paging.js";

// One-off vendor starts for `registry inspect` and `registry check --inspect`: the broker's own
// launcher (allowlisted env, private HOME/TMPDIR, process group, child uid; built by the root's
// launcher builder, src/app/launcher.ts) and the broker's own bounded tools/list reader, not second copies.

export { InspectionRun, sweepInspections } from "./inspect-run.js";

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

/** Why listVendorTools gave up: the run was interrupted (SIGINT/SIGTERM), its vendor killed. */
export class InspectionInterrupted extends Error {
  override readonly name = "InspectionInterrupted";
}

/**
 * Starts the vendor, reads its whole tools/list (bounded), and stops it again, whatever happened.
 * `signal` aborting (the CLI's SIGINT/SIGTERM) kills the vendor at once and rejects with InspectionInterrupted.
 */
export async function listVendorTools(
  launcher: VendorLauncher,
  connection: Connection,
  service: Service,
  credential: Credential,
  signal?: AbortSignal,
): Promise<VendorTool[]> {
  const handle = await launcher.launch(connection, service, renderCredential(service, credential));
  const kill = (): void => void handle.kill();
  try {
    if (signal?.aborted) throw new InspectionInterrupted("interrupted");
    signal?.addEventListener("abort", kill, { once: true });
    const tools = await readToolList(handle.client).catch((err: unknown) => {
      throw signal?.aborted ? new InspectionInterrupted("interrupted", { cause: err }) : err;
    });
    if (signal?.aborted) throw new InspectionInterrupted("interrupted");
    return tools;
  } finally {
    signal?.removeEventListener("abort", kill);
    if (signal?.aborted) await handle.kill();
    else await handle.close();
  }
}

/** Every tool of a started vendor's tools/list, through the broker's bounded reader (pages, tools, bytes, time). */
export async function readToolList(client: Pick<Client, "request">): Promise<VendorTool[]> {
  return (await listAllTools(client)).map((t) => ({ name: t.name, title: t.title, annotations: t.annotations }));
}
