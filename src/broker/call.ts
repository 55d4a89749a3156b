import { CallToolResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { WaitOutcome } from "../approvals/approval-service.js";
import { cardFacts } from "../approvals/card.js";
import type { AuditEvent } from "../audit/event.js";
import { FAIL_CLOSED_CLASS, type Service } from "../config/registry.js";
import { bindingOf } from "../vault/binding.js";
import { Redactor } from "../hygiene/redact.js";
import { redactToolResult } from "../hygiene/redact-result.js";
import { OAuthError } from "../login/oauth/errors.js";
import { truncateText, truncationNotice } from "../hygiene/truncate.js";
import { callHash } from "../policy/args-hash.js";
import { resolveCall, type BorrowCandidate, type CallDecision } from "../policy/resolve.js";
import { PoolError } from "../pool/errors.js";
import { frameTruncatedBytes } from "../pool/frame-reader.js";
import { renderTemplate } from "../pool/credential-template.js";
import type { Connection } from "../store/records.js";
import { credentialSecrets, type Credential } from "../vault/credential.js";
import { VaultError } from "../vault/errors.js";
import { CredentialCache } from "./credential-cache.js";
import type { BrokerDeps, CallerContext, CallExtra } from "./deps.js";
import { appendOrLog, CallAudit } from "./call-audit.js";
import { CallTrace, reportCall } from "./call-trace.js";
import { withLogContext } from "../log/context.js";
import { failureMessage, type FailureCode, type MessageFacts } from "./outcome.js";
import { callVendorTool, VendorCallError } from "./vendor-call.js";

/** A validated mcp_call request. */
export interface McpCallInput {
  readonly service: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly on_behalf_of: string;
}

/** How a call ran, reported in structuredContent. */
export type RanVia = "own" | "grant" | "shared" | "approval_once" | "approval_thread";

/** The broker's answer to mcp_call, before it is shaped into an MCP result. */
export type CallOutcome =
  | { readonly kind: "ok"; readonly via: RanVia; readonly connectionId: string; readonly ownerUserId: string | null; readonly result: CallToolResult; readonly truncated: boolean }
  | { readonly kind: "failed"; readonly code: FailureCode; readonly message: string };

function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object") {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** Runs mcp_call: identity, membership, policy, approval, the vendor call, hygiene and audit. */
export class CallService {
  constructor(private readonly d: BrokerDeps) {
    this.opened = new CredentialCache(d.credentialCache, d.clock);
  }

  /** Runs one call under its call id: its audit rows and every log line it writes carry that id. */
  async call(ctx: CallerContext, input: McpCallInput, extra: CallExtra = {}): Promise<CallOutcome> {
    const trace = extra.trace ?? new CallTrace();
    return withLogContext({ callId: trace.callId }, async () => {
      const outcome = await this.traced(ctx, input, { ...extra, trace });
      reportCall(this.d, input, outcome, trace);
      return outcome;
    });
  }

  private async traced(ctx: CallerContext, input: McpCallInput, extra: CallExtra & { trace: CallTrace }): Promise<CallOutcome> {
    const started = Date.now();
    const { thread } = ctx;
    // The exact arguments the approval (if any) is bound to and the vendor receives: a private frozen copy.
    const args = deepFreeze(structuredClone(input.args));
    const argsHash = callHash(input.service, input.tool, args);
    const service = this.d.registry.get(input.service);
    const toolClass = service ? service.classOf(input.tool) : FAIL_CLOSED_CLASS;
    const base = {
      teamId: thread.teamId,
      channelId: thread.channelId,
      threadTs: thread.threadTs,
      callerUserId: ctx.userId ?? null,
      service: input.service,
      tool: input.tool,
      argsHash,
      callId: extra.trace.callId,
    };
    const fail = async (code: FailureCode, facts: MessageFacts = {}, audit: Partial<AuditEvent> = {}): Promise<CallOutcome> => {
      // Nothing ran: the refusal stands even if its row cannot be written (the log records that).
      await appendOrLog(this.d.store.audit, this.d.log, [
        { at: this.d.clock.now(), event: "call_denied", ...base, decision: code, errorCode: code, durationMs: Date.now() - started, ...audit },
      ], this.d.metrics);
      return { kind: "failed", code, message: failureMessage(code, { service: input.service, tool: input.tool, ...facts }) };
    };

    const caller = ctx.userId;
    const callerIsMember = caller && service ? await this.isMember(thread.teamId, thread.channelId, caller) : false;
    const facts = caller && service && callerIsMember ? await this.gatherConnections(ctx, caller, service) : { own: undefined, others: [], shared: undefined, ownRow: undefined };
    const decision: CallDecision = resolveCall({
      caller,
      onBehalfOf: input.on_behalf_of,
      serviceKnown: service !== undefined,
      callerIsMember,
      toolClass,
      own: facts.own,
      others: facts.others,
      shared: facts.shared,
    });

    switch (decision.kind) {
      case "refuse": {
        const detail = decision.code === "unknown_service" ? this.d.registry.list().map((s) => s.name).join(", ") : undefined;
        return fail(decision.code, { ...(decision.turnUser ? { turnUser: decision.turnUser } : {}), ...(decision.ownerUserId ? { ownerUserId: decision.ownerUserId } : {}), ...(detail ? { detail } : {}) }, decision.ownerUserId ? { ownerUserId: decision.ownerUserId } : {});
      }
      case "needs_connect":
        return fail("needs_connect");
      case "run":
        return this.run(ctx, service!, decision.connectionId, decision.via, args, argsHash, base, started, extra, undefined, decision.via === "own" ? facts.ownRow : undefined);
      case "ask_owner": {
        const owner = decision.ownerUserId;
        const conn = await this.d.store.connections.get(decision.connectionId);
        const redactor = conn ? this.redactorFor(conn, service!) : new Redactor([]);
        const outcome = await this.askOwner(ctx, caller!, service!, input.tool, decision, args, argsHash, redactor, extra);
        switch (outcome.kind) {
          case "denied":
            return this.failNoAudit("approval_denied", input, owner);
          case "expired":
            return this.failNoAudit("approval_expired", input, owner);
          case "cancelled":
            return this.failNoAudit("approval_cancelled", input, owner);
          case "interrupted":
            return this.failNoAudit("approval_interrupted", input, owner);
          case "unavailable":
            return fail("approval_unavailable", { ownerUserId: owner }, { ownerUserId: owner, connectionId: decision.connectionId });
          case "allowed_once":
          case "allowed_thread": {
            // Forward only what was approved: the approval's hash must equal this call's, consumed once.
            if (outcome.approval.argsHash !== callHash(input.service, input.tool, args) || !(await this.d.approvals.consume(outcome.approval, argsHash))) {
              return fail("approval_mismatch", { ownerUserId: owner });
            }
            return this.run(ctx, service!, decision.connectionId, outcome.kind === "allowed_once" ? "approval_once" : "approval_thread", args, argsHash, base, started, extra, owner);
          }
        }
      }
    }
  }

  private failNoAudit(code: FailureCode, input: McpCallInput, owner: string): CallOutcome {
    // The approval's own audit rows (requested, decided/expired) already record this outcome.
    return { kind: "failed", code, message: failureMessage(code, { service: input.service, tool: input.tool, ownerUserId: owner }) };
  }

  private async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    try {
      return await this.d.membership.isMember(teamId, channelId, userId);
    } catch (err) {
      this.d.log.warn("membership check failed; treating as not a member", { channelId, error: (err as Error).message });
      return false;
    }
  }

  /** The caller's own, other members', and the shared connection for this service, usable in this thread now. */
  private async gatherConnections(ctx: CallerContext, caller: string, service: Service) {
    const now = this.d.clock.now();
    const { thread } = ctx;
    // Hot path: the caller's own connection is one indexed lookup; everything else only when it is missing.
    const ownRow = await this.d.store.connections.findOwnActive(caller, service.name, thread);
    if (ownRow && ownRow.expiresAt > now) {
      return { own: { id: ownRow.id, ownerUserId: ownRow.ownerUserId, createdAt: ownRow.createdAt }, others: [], shared: undefined, ownRow };
    }
    const rows = (await this.d.store.connections.list({ teamId: thread.teamId, service: service.name, statuses: ["active"] })).filter((c) => c.expiresAt > now);
    const inThread = (c: Connection) => c.scope === "thread" && c.channelId === thread.channelId && c.threadTs === thread.threadTs;
    const shared = rows.find((c) => c.scope === "shared");
    const participants = this.d.turns.participantsOf(thread);
    const others: BorrowCandidate[] = [];
    for (const c of rows) {
      if (c.ownerUserId === null || c.ownerUserId === caller) continue;
      if (!(inThread(c) || (c.scope === "user" && participants.has(c.ownerUserId)))) continue;
      const grant = (await this.d.store.grants.findLive(c.id, caller, thread)) !== undefined;
      const ownerIsMember = await this.isMember(thread.teamId, thread.channelId, c.ownerUserId);
      others.push({ id: c.id, ownerUserId: c.ownerUserId, createdAt: c.createdAt, grant, ownerIsMember });
    }
    return {
      own: undefined,
      others,
      shared: shared ? { id: shared.id, ownerUserId: null, createdAt: shared.createdAt } : undefined,
      ownRow: undefined,
    };
  }

  private async askOwner(
    ctx: CallerContext,
    caller: string,
    service: Service,
    tool: string,
    decision: Extract<CallDecision, { kind: "ask_owner" }>,
    args: Record<string, unknown>,
    argsHash: string,
    redactor: Redactor,
    extra: CallExtra,
  ): Promise<WaitOutcome> {
    let ticks = 0;
    const heartbeat = extra.progress
      ? setInterval(() => {
          void extra.progress?.({ progress: ++ticks, message: `waiting for <@${decision.ownerUserId}> to approve` }).catch(() => {});
        }, 10_000)
      : undefined;
    heartbeat?.unref();
    const t0 = performance.now();
    try {
      return await this.d.approvals.requestAndWait(
        { thread: ctx.thread, connectionId: decision.connectionId, ownerUserId: decision.ownerUserId, borrowerUserId: caller, service: service.name, tool, argsHash },
        {
          borrowerUserId: caller,
          ownerUserId: decision.ownerUserId,
          service: service.name,
          serviceDisplayName: service.displayName,
          tool,
          write: service.classOf(tool).write,
          reason: decision.reason,
          ...cardFacts(args, redactor, service.classOf(tool).write),
          teamId: ctx.thread.teamId,
          channelId: ctx.thread.channelId,
          threadTs: ctx.thread.threadTs,
        },
        extra.signal,
      );
    } finally {
      if (heartbeat) clearInterval(heartbeat);
      if (extra.trace) extra.trace.approvalMs += performance.now() - t0;
    }
  }

  /** Decrypted credentials, bounded in count and age (SLAUDE_CREDENTIAL_CACHE_*). */
  readonly opened: CredentialCache;

  /** Drops the decrypted credential of an ended connection from memory. */
  forget(connectionId: string): void {
    this.opened.delete(connectionId);
  }

  /**
   * Decrypts a connection's credential, memoised per exact ciphertext and binding: any change to
   * the row's sealed bytes or to a bound field (owner, scope, thread…) decrypts (and verifies) again.
   */
  private openCached(conn: Connection, service: Service): { credential: Credential; redactor: Redactor; version: string } {
    const s = conn.sealed;
    if (!s) throw new VaultError("wiped", "connection has no credential");
    const b = bindingOf(conn);
    const version = [s.keyId, s.nonce.toString("hex"), s.tag.toString("hex"), s.ciphertext.length, b.teamId, b.ownerUserId, b.service, b.scope, b.channelId, b.threadTs].join("|");
    const hit = this.opened.get(conn.id);
    if (hit && hit.version === version) return hit;
    const credential = this.d.vault.openCredential(s, b);
    const entry = { version, credential, redactor: this.redactorOf(credential, service) };
    this.opened.set(conn.id, entry);
    return entry;
  }

  /**
   * Starts the vendor of the caller's own connection to `service` (else the service's shared one,
   * never another member's) so its tool list reaches the metadata cache; false when there is none,
   * the caller is not a member, or the vendor does not start. Runs no tool.
   */
  async warmMetadata(ctx: CallerContext, caller: string, service: Service): Promise<boolean> {
    const { thread } = ctx;
    if (!(await this.isMember(thread.teamId, thread.channelId, caller))) return false;
    const now = this.d.clock.now();
    const own = await this.d.store.connections.findOwnActive(caller, service.name, thread);
    const row =
      own && own.expiresAt > now
        ? own
        : (await this.d.store.connections.list({ teamId: thread.teamId, service: service.name, statuses: ["active"] })).find((c) => c.scope === "shared" && c.expiresAt > now);
    if (!row) return false;
    try {
      const { credential, version } = this.openCached(row, service);
      // The pool refreshes the metadata before it hands a new vendor over: once leased, it is cached.
      await this.d.pool.withLease(row, service, version, () => credential, async () => {});
      return true;
    } catch (err) {
      this.d.log.warn("tool list could not be fetched for mcp_describe", { service: service.name, connectionId: row.id, error: err instanceof Error ? err.name : "unknown" });
      return false;
    }
  }

  /** The redactor of a connection's credential (memoised with it); an unopenable row redacts nothing and fails later. */
  redactorFor(conn: Connection, service: Service): Redactor {
    try {
      return this.openCached(conn, service).redactor;
    } catch {
      return new Redactor([]);
    }
  }

  private redactorOf(cred: Credential, service: Service): Redactor {
    const t = service.entry.transport;
    const rendered: string[] = [];
    try {
      if (t.type === "stdio") for (const tpl of Object.values(t.credentialEnv)) rendered.push(renderTemplate(tpl, cred));
      else rendered.push(renderTemplate(t.credentialHeader.value, cred));
    } catch {
      // An incomplete credential fails later, at launch; redaction still covers the raw values.
    }
    // Pasted fields the registry marks non-secret (an email, a user name) are redacted only inside secret pairs.
    const capture = service.entry.capture;
    const open = capture.strategy === "paste" ? new Set(capture.fields.filter((f) => !f.secret).map((f) => f.name)) : new Set<string>();
    if (cred.kind === "fields" && open.size) {
      const secrets = Object.entries(cred.fields).filter(([k]) => !open.has(k)).map(([, v]) => v);
      const companions = Object.entries(cred.fields).filter(([k]) => open.has(k)).map(([, v]) => v);
      const renderedSecret = rendered.filter((r) => !companions.includes(r));
      return new Redactor(secrets, renderedSecret, companions);
    }
    return new Redactor(credentialSecrets(cred), rendered);
  }

  private async run(
    ctx: CallerContext,
    service: Service,
    connectionId: string,
    via: RanVia,
    args: Record<string, unknown>,
    argsHash: string,
    base: Omit<AuditEvent, "at" | "event">,
    started: number,
    extra: CallExtra,
    approver?: string,
    fresh?: Connection,
  ): Promise<CallOutcome> {
    const now = this.d.clock.now();
    if (extra.trace) extra.trace.via = via;
    // `fresh` was read in this same call; otherwise re-read: a revoke since the decision must win.
    const conn = fresh?.id === connectionId ? fresh : await this.d.store.connections.get(connectionId);
    const record = new CallAudit(this.d.store.audit, this.d.log, (e) => ({
      at: this.d.clock.now(),
      event: "call",
      ...base,
      ownerUserId: conn?.ownerUserId ?? null,
      connectionId,
      decision: via,
      approverUserId: approver ?? null,
      durationMs: Date.now() - started,
      ...e,
    }), { callId: extra.trace?.callId, metrics: this.d.metrics });
    const audit = (e: Partial<AuditEvent>) => record.completed(e);
    const failed = async (code: FailureCode, facts: MessageFacts = {}): Promise<CallOutcome> => {
      await audit({ errorCode: code });
      return { kind: "failed", code, message: failureMessage(code, { service: service.name, tool: base.tool ?? "", ...facts }) };
    };
    if (!conn || conn.status !== "active" || conn.expiresAt <= now) return failed("connection_unusable");
    let opened: { credential: Credential; redactor: Redactor; version: string };
    let live: Connection = conn;
    try {
      opened = this.openCached(conn, service);
      const cred = opened.credential;
      if (cred.kind === "oauth" && cred.expiresAt !== undefined && this.d.refresher && cred.expiresAt - now <= (this.d.refreshSkewMs ?? 60_000)) {
        // Refresh first (shared with concurrent calls), then use the row as stored: the child is
        // respawned with the new token because the ciphertext version changed.
        await this.d.refresher.fresh({ id: conn.id });
        const reread = await this.d.store.connections.get(conn.id);
        if (!reread || reread.status !== "active") return failed("connection_unusable");
        live = reread;
        opened = this.openCached(reread, service);
      }
    } catch (err) {
      if (err instanceof OAuthError) {
        // A refresh that failed: a rejected refresh token means a new login; anything else is transient.
        if (err.code === "needs_login" || err.code === "connection_inactive") return failed("connection_unusable");
        this.d.log.warn("oauth refresh failed", { connectionId, code: err.code });
        return failed("vendor_unreachable");
      }
      if (!(err instanceof VaultError)) {
        // Not the refresher's own failure (a bug, the store): never read a stray `code` as an OAuth verdict.
        this.d.log.error("credential refresh failed unexpectedly", { connectionId, error: err instanceof Error ? err.name : "unknown" });
        return failed("internal_error");
      }
      this.d.log.error("credential refused by the vault", { connectionId, code: err.code });
      await this.d.pool.drop(connectionId);
      return failed("credential_unusable");
    }
    const { credential, redactor, version: secretVersion } = opened;
    // Progress is forwarded in order, and all of it before the result: a client that handles the
    // response first would drop a late progress notification for a finished request.
    let forwarded: Promise<unknown> = Promise.resolve();
    let progressed = false;
    // Write-ahead: nothing reaches the vendor unless its call_started row is committed.
    if (!(await record.started())) return { kind: "failed", code: "audit_unavailable", message: failureMessage("audit_unavailable", { service: service.name }) };
    try {
      const result = await this.d.pool.withLease(live, service, secretVersion, () => credential, async (client) => {
        const t0 = performance.now();
        return callVendorTool(client, base.tool ?? "", args, {
          timeoutMs: this.d.callTimeoutMs,
          signal: extra.signal,
          onprogress: extra.progress
            ? (p) => {
                progressed = true;
                const update = { progress: p.progress, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.message ? { message: redactor.text(p.message) } : {}) };
                forwarded = forwarded.then(() => extra.progress?.(update)).catch(() => {});
              }
            : undefined,
        }).finally(() => {
          if (extra.trace) extra.trace.vendorMs = performance.now() - t0;
        });
      });
      if (progressed) {
        await forwarded;
        await new Promise((r) => setImmediate(r));
      }
      const { result: clean, truncated, bytes } = this.clean(result, redactor);
      // Success is recorded only for a result the client can parse: anything else is the vendor's failure.
      if (!CallToolResultSchema.safeParse(clean).success) return failed("vendor_error", { detail: "its result could not be delivered intact" });
      await audit({ resultBytes: bytes, ...(clean.isError ? { errorCode: "vendor_tool_error" } : {}) });
      return { kind: "ok", via, connectionId, ownerUserId: conn.ownerUserId, result: clean, truncated };
    } catch (err) {
      return this.vendorFailure(err, connectionId, redactor, failed, extra);
    }
  }

  private async vendorFailure(
    err: unknown,
    connectionId: string,
    redactor: Redactor,
    failed: (code: FailureCode, facts?: MessageFacts) => Promise<CallOutcome>,
    extra: CallExtra,
  ): Promise<CallOutcome> {
    if (err instanceof PoolError) {
      switch (err.code) {
        case "pool_busy":
          return failed("pool_busy");
        case "backoff":
          return failed("vendor_backoff", err.retryAt ? { retryAt: err.retryAt } : {});
        case "vendor_unreachable":
          return failed("vendor_unreachable", err.retryAt ? { retryAt: err.retryAt } : {});
        case "credential_incomplete":
          return failed("credential_unusable");
        case "vendor_misbehaved":
          return failed("vendor_misbehaved");
        default:
          this.d.log.warn("vendor start failed", { connectionId, code: err.code, cause: redactor.text(String((err.cause as Error | undefined)?.message ?? "")).slice(0, 300) });
          return failed("vendor_crashed");
      }
    }
    if (extra.signal?.aborted) return failed("cancelled");
    if (err instanceof VendorCallError) {
      // Decided by the broker's own timer and transport, never by the code a vendor chose.
      switch (err.end.kind) {
        case "cancelled":
          return failed("cancelled");
        case "timeout":
          // A hung vendor holds nothing we want: kill it so the next call starts fresh.
          await this.d.pool.drop(connectionId, "kill");
          return failed("vendor_timeout");
        case "closed":
          return failed("vendor_crashed");
        case "vendor_error":
          return failed("vendor_error", { detail: sanitizeVendorText(redactor.text(err.end.message)) });
        case "other":
          err = err.end.error;
      }
    }
    this.d.log.error("vendor call failed", { connectionId, error: redactor.text((err as Error).message ?? String(err)) });
    return failed("vendor_crashed");
  }

  /** Redacts every credential form and caps the size; returns the size seen before truncation. */
  private clean(result: CallToolResult, redactor: Redactor): { result: CallToolResult; truncated: boolean; bytes: number } {
    // A result cut from an oversized frame is always truncated, reporting the size the vendor sent.
    const framed = frameTruncatedBytes(result);
    const redacted = redactToolResult(result, redactor, { cutEnds: framed !== undefined });
    const bytes = framed ?? Buffer.byteLength(JSON.stringify(redacted));
    const limits = this.d.limits;
    const texts = redacted.content.filter((c) => c.type === "text").map((c) => (c as { text: string }).text);
    const textBytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
    const lines = texts.reduce((n, t) => n + t.split("\n").length, 0);
    if (framed === undefined && bytes <= limits.maxBytes && textBytes <= limits.maxBytes && lines <= limits.maxLines) {
      return { result: { content: redacted.content, ...(redacted.structuredContent ? { structuredContent: redacted.structuredContent } : {}), ...(result.isError ? { isError: true } : {}) }, truncated: false, bytes };
    }
    const joined = texts.join("\n");
    const cut = truncateText(joined || JSON.stringify(redacted.structuredContent ?? redacted.content), limits);
    return {
      result: { content: [{ type: "text", text: cut.text + truncationNotice(bytes, limits) }], ...(result.isError ? { isError: true } : {}) },
      truncated: true,
      bytes,
    };
  }
}

/** A vendor's error text made safe to show: one line, no URLs, at most 200 characters. */
export function sanitizeVendorText(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").replace(/https?:\/\/\S+/g, "[url]").trim();
  return oneLine.length > 200 ? oneLine.slice(0, 199) + "…" : oneLine;
}
