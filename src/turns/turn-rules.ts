// The ordering and resolution vocabulary of turns, apart from the state that holds them.

/** Who a tool call runs for, as the live turns of its thread decide it. */
export type TurnResolution =
  | { readonly kind: "caller"; readonly userId: string }
  | { readonly kind: "no_turn" }
  /** Turns of two or more users are live and the request named none of them. */
  | { readonly kind: "turn_ambiguous"; readonly users: readonly string[] }
  /** The request named a turn that is not live in its thread (forged, of another thread, ended or superseded). */
  | { readonly kind: "turn_unknown" };

/** A Slack message ts ("1700000000.000100") as microseconds since the epoch, or undefined if malformed. */
export function slackTsMicros(ts: string): number | undefined {
  const m = /^(\d{1,12})\.(\d{1,8})$/.exec(ts);
  if (!m) return undefined;
  // Slack's ts has six fraction digits; pad or cut so "…​.1" and "…​.100000" order alike.
  return Number(m[1]) * 1_000_000 + Number(m[2]!.padEnd(6, "0").slice(0, 6));
}

/** Whether an event ordered at `o` is strictly newer than the watermark `w`. */
export function newerOrder(o: number, w: number): boolean {
  return o > w;
}

/** The shape of a turn id the broker issues (`turn_` + 18 random bytes, base64url). */
export const TURN_ID_PATTERN = /^turn_[A-Za-z0-9_-]{24}$/;
