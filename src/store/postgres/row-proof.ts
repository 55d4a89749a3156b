// Proofs that the rows a call was decided from are still the rows in the database (issue 25,
// item 5: the first round trip of a warm call on PostgreSQL). A version is what `xmin` reads for a
// row: the id of the transaction that wrote that row version, which every INSERT and UPDATE
// changes and a DELETE takes away. A set of rows has the version of its ids and versions together,
// and no row at all the version NULL. The statement that commits a call's write-ahead row checks
// every proof in its own snapshot (`provedSql`) and writes and takes nothing if one fails, so a
// call decided from rows read earlier (held in memory) runs only if those rows are unchanged when
// its `call_started` row commits.
//
// Each kind names the very rows the read it stands for returns; `versionSql` is the expression a
// read selects beside its rows to learn their version, `provedSql` the check. Keys are parameters,
// never text in the SQL.

import type { RowProof } from "../../domain/row-proof.js";

export type { RowProof };

type Kind = RowProof["kind"];

/** The version expression of one kind over its key parameters (`$n` placeholders, in key order). */
const VERSION: Record<Kind, (p: readonly string[]) => string> = {
  session: ([id]) => `(SELECT xmin::text FROM mcp_sessions WHERE id = ${id}::text AND ended_at IS NULL)`,
  turn: ([key]) => `(SELECT xmin::text FROM turn_threads WHERE thread_key = ${key}::text)`,
  own: ([team, owner, service]) =>
    `(SELECT string_agg(id || ':' || xmin::text, ',' ORDER BY id) FROM connections
       WHERE team_id = ${team}::text AND owner_user_id = ${owner}::text AND service = ${service}::text)`,
  pin: ([team, service, tool]) =>
    `(SELECT xmin::text FROM tool_pins WHERE team_id = ${team}::text AND service = ${service}::text AND tool = ${tool}::text)`,
};

/** The key of a proof, in the order its version expression takes it. */
function keyOf(p: RowProof): readonly string[] {
  switch (p.kind) {
    case "session":
      return [p.id];
    case "turn":
      return [p.threadKey];
    case "own":
      return [p.teamId, p.ownerUserId, p.service];
    case "pin":
      return [p.teamId, p.service, p.tool];
  }
}

/** Placeholders `$from`, `$from+1`, … for `n` parameters. */
const placeholders = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `$${from + i}`);

/**
 * The version of the rows `proof` names, as a statement reads it now: `SELECT <sql>` with `params`
 * (its version field is not read). What the proof of a later call must carry.
 */
export function versionSql(proof: RowProof, from = 1): { readonly sql: string; readonly params: readonly string[] } {
  const key = keyOf(proof);
  return { sql: VERSION[proof.kind](placeholders(from, key.length)), params: key };
}

/**
 * One boolean expression true only when every proof holds (its rows' version now is the one it
 * carries, NULL for none), with the parameters it takes from `$from` on. No proof: true.
 */
export function provedSql(
  proofs: readonly RowProof[],
  from: number,
): { readonly sql: string; readonly params: readonly (string | null)[] } {
  const terms: string[] = [];
  const params: (string | null)[] = [];
  for (const p of proofs) {
    const key = keyOf(p);
    const at = from + params.length;
    terms.push(`${VERSION[p.kind](placeholders(at, key.length))} IS NOT DISTINCT FROM $${at + key.length}::text`);
    params.push(...key, p.version);
  }
  return { sql: terms.length ? `(${terms.join(" AND ")})` : "true", params };
}

/** The statement shape of a list of proofs (their kinds in order): statements are prepared per shape. */
export function proofShape(proofs: readonly RowProof[]): string {
  return proofs.map((p) => p.kind).join(",");
}
