import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import { newId } from "../domain/ids.js";
import type { ThreadRef } from "../domain/thread.js";
import type { ResultLimits } from "../hygiene/truncate.js";
import type { Logger } from "../log/logger.js";
import type { ResultRepo, StoredResult } from "../store/result-repo.js";
import type { AuditRepo } from "../store/store.js";
import { VaultError } from "../vault/errors.js";
import type { Vault } from "../vault/vault.js";
import { type ReaderFacts, type ReadRefusal, readVerdict } from "./read-policy.js";
import { pageBounds, pageOfBytes } from "./result-pages.js";
import { parseResultUri, resultUri } from "./result-uri.js";

// The result store: keeps the full, redacted text of a truncated tool result, sealed by the vault
// and owned by the caller and thread of the call, for a TTL and within a per-team byte cap (the
// team's oldest results are evicted first); serves it page by page to its owner only.

/** Settings of the result store (SLAUDE_RESULT_TTL_SECONDS, SLAUDE_RESULT_STORE_MAX_BYTES_PER_TEAM). */
export interface ResultStoreSettings {
  readonly ttlMs: number;
  readonly maxBytesPerTeam: number;
  /** Page size: the inline cap (SLAUDE_RESULT_MAX_BYTES / _LINES). */
  readonly pageLimits: ResultLimits;
}

/** Defaults: one hour, 64 MiB per team. */
export const RESULT_STORE_DEFAULTS = { ttlMs: 3_600_000, maxBytesPerTeam: 64 * 1024 * 1024 } as const;

/** The ports the result store runs on. */
export interface ResultStoreDeps {
  readonly results: ResultRepo;
  readonly audit: AuditRepo;
  readonly vault: Vault;
  readonly clock: Clock;
  readonly log: Logger;
}

/** One truncated call's full text to keep (already redacted), and whose it is. */
export interface KeepRequest {
  readonly callId: string;
  readonly thread: ThreadRef;
  readonly ownerUserId: string;
  readonly service: string;
  readonly tool: string;
  readonly text: string;
}

/** Where a kept result can be read, for the answer that links to it. */
export interface KeptResult {
  readonly id: string;
  readonly uri: string;
  readonly bytes: number;
  readonly pages: number;
  readonly expiresAt: number;
}

/** What keeping did: kept, or not (larger than the team's whole cap, or the store failed). */
export type KeepOutcome =
  | ({ readonly kind: "kept" } & KeptResult)
  | { readonly kind: "not_kept"; readonly reason: "too_large" | "unavailable" };

/** What a read answers: a page, the one "not found" for every refusal, or a page past the end (owner only). */
export type ReadOutcome =
  | {
      readonly kind: "page";
      readonly uri: string;
      readonly text: string;
      readonly page: number;
      readonly pages: number;
      readonly next: string | undefined;
    }
  | { readonly kind: "not_found" }
  | { readonly kind: "no_such_page"; readonly pages: number };

/** The result store service: keep, read (policy, decrypt, page, audit) and reap. */
export class ResultStore {
  constructor(
    private readonly d: ResultStoreDeps,
    readonly settings: ResultStoreSettings,
  ) {}

  /** Seals and stores `req.text`; never throws: a failure only means the answer carries no link. */
  async keep(req: KeepRequest): Promise<KeepOutcome> {
    const now = this.d.clock.now();
    const id = newId("res");
    const plain = Buffer.from(req.text, "utf8");
    try {
      const sealed = this.d.vault.sealResult(plain, {
        resultId: id,
        teamId: req.thread.teamId,
        ownerUserId: req.ownerUserId,
        channelId: req.thread.channelId,
        threadTs: req.thread.threadTs,
      });
      const row: StoredResult = {
        id,
        teamId: req.thread.teamId,
        channelId: req.thread.channelId,
        threadTs: req.thread.threadTs,
        ownerUserId: req.ownerUserId,
        callId: req.callId,
        service: req.service,
        tool: req.tool,
        sizeBytes: plain.length,
        createdAt: now,
        expiresAt: now + this.settings.ttlMs,
        sealed,
      };
      const base = {
        at: now,
        teamId: row.teamId,
        channelId: row.channelId,
        threadTs: row.threadTs,
        service: row.service,
        tool: row.tool,
      };
      const put = await this.d.results.put(row, this.settings.maxBytesPerTeam, (evicted) => [
        {
          ...base,
          event: "result_stored",
          callerUserId: row.ownerUserId,
          ownerUserId: row.ownerUserId,
          callId: row.callId,
          resultBytes: row.sizeBytes,
        },
        // Another owner's result may go: the team's cap is shared, the oldest leaves first.
        ...evicted.map(
          (e): AuditEvent => ({
            at: now,
            event: "result_evicted",
            teamId: e.teamId,
            channelId: e.channelId,
            threadTs: e.threadTs,
            ownerUserId: e.ownerUserId,
            service: e.service,
            tool: e.tool,
            callId: e.callId,
            resultBytes: e.sizeBytes,
            decision: "team_cap",
            actor: "result-store",
          }),
        ),
      ]);
      if (!put.stored) {
        this.d.log.warn("truncated result not kept: larger than the team's result store", {
          callId: req.callId,
          bytes: row.sizeBytes,
          maxBytesPerTeam: this.settings.maxBytesPerTeam,
        });
        return { kind: "not_kept", reason: "too_large" };
      }
      return {
        kind: "kept",
        id,
        uri: resultUri(id),
        bytes: row.sizeBytes,
        pages: pageBounds(plain, this.settings.pageLimits).length,
        expiresAt: row.expiresAt,
      };
    } catch (err) {
      this.d.log.error("truncated result could not be kept", {
        callId: req.callId,
        error: err instanceof Error ? err.name : "unknown",
      });
      return { kind: "not_kept", reason: "unavailable" };
    } finally {
      plain.fill(0);
    }
  }

  /**
   * Serves one page of the result `uri` names to `reader`, under the read policy; every refusal is
   * the same not_found. Each read, served or refused, is audited; a page is served only once its
   * audit row is written (an audit failure throws).
   */
  async read(uri: string, reader: ReaderFacts): Promise<ReadOutcome> {
    const now = this.d.clock.now();
    const ref = parseResultUri(uri);
    const row = ref ? await this.d.results.get(ref.id) : undefined;
    const verdict = ref ? readVerdict(row, reader, now) : ({ kind: "not_found", reason: "malformed" } as const);
    // Facts of the row go to the audit only when it is the reader's own team's.
    const sameTeam =
      row && row.teamId === reader.thread.teamId
        ? { ownerUserId: row.ownerUserId, callId: row.callId, service: row.service, tool: row.tool }
        : {};
    const audit = (e: Partial<AuditEvent>): AuditEvent => ({
      at: now,
      event: "result_read",
      teamId: reader.thread.teamId,
      channelId: reader.thread.channelId,
      threadTs: reader.thread.threadTs,
      callerUserId: reader.userId ?? null,
      ...sameTeam,
      ...e,
    });
    if (verdict.kind === "not_found" || !row || !ref)
      return this.refuse(audit, verdict.kind === "not_found" ? verdict.reason : "unknown");
    let plain: Buffer;
    try {
      plain = this.d.vault.openResult(row.sealed, {
        resultId: row.id,
        teamId: row.teamId,
        ownerUserId: row.ownerUserId,
        channelId: row.channelId,
        threadTs: row.threadTs,
      });
    } catch (err) {
      if (!(err instanceof VaultError)) throw err;
      // Tampered, moved or under a rotated-away key: fail closed, and say so only to the log and audit.
      this.d.log.error("stored result refused by the vault", { callId: row.callId, code: err.code });
      return this.refuse(audit, "undecryptable");
    }
    // Only the page asked for is decoded; the whole plaintext is zeroed at once.
    const page = pageOfBytes(plain, this.settings.pageLimits, ref.page);
    plain.fill(0);
    if (!("text" in page)) {
      await this.d.audit.append([audit({ decision: "refused", errorCode: "no_such_page" })]);
      return { kind: "no_such_page", pages: page.pages };
    }
    await this.d.audit.append([
      audit({ decision: `page ${page.page}/${page.pages}`, resultBytes: Buffer.byteLength(page.text) }),
    ]);
    return {
      kind: "page",
      uri,
      text: page.text,
      page: page.page,
      pages: page.pages,
      next: page.page < page.pages ? resultUri(row.id, page.page + 1) : undefined,
    };
  }

  /** The refusal: its audit row (a failure to write it is logged; the answer is the same). */
  private async refuse(
    audit: (e: Partial<AuditEvent>) => AuditEvent,
    reason: ReadRefusal | "undecryptable",
  ): Promise<ReadOutcome> {
    try {
      await this.d.audit.append([audit({ decision: "refused", errorCode: reason })]);
    } catch (err) {
      this.d.log.error("refused result read could not be audited", {
        reason,
        error: err instanceof Error ? err.name : "unknown",
      });
    }
    return { kind: "not_found" };
  }

  /** Deletes expired results (run by the reaper); returns how many went. */
  async reap(): Promise<number> {
    return this.d.results.deleteExpired(this.d.clock.now());
  }
}
