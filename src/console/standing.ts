import type http from "node:http";
import { z } from "zod";
import { type ConnectionFacts, gatherConnectionFacts } from "../broker/call-facts.js";
import type { BrokerDeps } from "../broker/deps.js";
import type { Service, ToolClass } from "../config/registry.js";
import type { ThreadRef } from "../domain/thread.js";
import type { PinGate } from "../pinning/policy.js";
import { type CallDecision, resolveCall } from "../policy/resolve.js";
import { sendJson } from "../server/http-server.js";
import { knownUser, query } from "./http.js";
import type { ConsoleWorkspace } from "./ports.js";

// The Services panel: what the next call of this person in this thread would get, per service,
// decided by the broker's own fact gathering and pure policy (never guessed by the page).

const id = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/);
const standingQuery = z.object({ user: id, channel: id, ts: z.string().regex(/^\d{1,12}\.\d{1,8}$/) }).strict();

/** The class the panel asks about: a read tool others may lend, so lending shows as it would run. */
const PROBE_CLASS: ToolClass = Object.freeze({ access: "borrowable", write: false });
/** A reviewed tool: the panel speaks of connections, not of one tool's pin. */
const PROBE_PIN: PinGate = Object.freeze({ kind: "run", planned: "pinned" });

/** How the next call of a service would go, in the panel's words. */
export type Standing =
  | { readonly kind: "own" | "grant" | "shared"; readonly connectionId: string; readonly owner: string | null }
  | { readonly kind: "needs_approval"; readonly connectionId: string; readonly owner: string }
  | { readonly kind: "needs_connect" }
  | { readonly kind: "not_member" }
  | { readonly kind: "refused"; readonly code: string };

/**
 * The broker's decision for `caller`'s next read call on gathered facts: the one place the panel
 * calls the policy, so a change of its facts is a change here only.
 */
export function nextCallDecision(caller: string, facts: ConnectionFacts): CallDecision {
  return resolveCall({
    caller,
    onBehalfOf: caller,
    serviceKnown: true,
    toolClass: PROBE_CLASS,
    pin: PROBE_PIN,
    ...facts,
  });
}

/** A decision as the panel shows it. */
export function standingOf(d: CallDecision, facts: ConnectionFacts): Standing {
  switch (d.kind) {
    case "run": {
      const owner =
        d.via === "own"
          ? (facts.own?.ownerUserId ?? null)
          : d.via === "grant"
            ? (facts.others.find((o) => o.id === d.connectionId)?.ownerUserId ?? null)
            : null;
      return { kind: d.via, connectionId: d.connectionId, owner };
    }
    case "ask_owner":
      return { kind: "needs_approval", connectionId: d.connectionId, owner: d.ownerUserId };
    case "needs_connect":
      return { kind: "needs_connect" };
    case "refuse":
      return d.code === "not_member" ? { kind: "not_member" } : { kind: "refused", code: d.code };
  }
}

/** What the standing endpoint needs. */
export interface StandingApiDeps {
  readonly workspace: ConsoleWorkspace;
  /** The broker's dependencies: the same store, membership and turns its calls read. */
  readonly broker: BrokerDeps;
}

/** GET /console/api/standing. */
export class StandingApi {
  constructor(private readonly d: StandingApiDeps) {}

  /** The standing of every service for `user` in thread `channel`/`ts`. */
  async standing(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, standingQuery);
    if (!q || !(await knownUser(this.d.workspace, res, q.user))) return;
    const thread: ThreadRef = { teamId: this.d.workspace.teamId, channelId: q.channel, threadTs: q.ts };
    const services = await Promise.all(this.d.broker.registry.list().map((s) => this.one(s, q.user, thread)));
    sendJson(res, 200, { services });
  }

  private async one(service: Service, caller: string, thread: ThreadRef): Promise<Record<string, unknown>> {
    const facts = await gatherConnectionFacts(this.d.broker, { caller, service, thread });
    const standing = standingOf(nextCallDecision(caller, facts), facts);
    const conn =
      "connectionId" in standing ? await this.d.broker.store.connections.get(standing.connectionId) : undefined;
    return {
      name: service.name,
      displayName: service.displayName,
      standing,
      ...(conn ? { connection: { scope: conn.scope, status: conn.status, expiresAt: conn.expiresAt } } : {}),
    };
  }
}
