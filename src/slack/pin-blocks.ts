import type { types } from "@slack/bolt";
import { type DiffLine, diffDefinitions } from "../pinning/diff.js";
import type { ToolPin } from "../store/records.js";
import { contextBlock, esc, when } from "./card-mrkdwn.js";
import type { Block } from "./slack-api.js";

// The App Home's admin list of tool definition changes (src/pinning): each quarantined, new or
// rejected tool with an excerpt of its diff and Accept / Reject buttons bound to the waiting
// definition's hash. Block Kit caps a section at 3,000 characters and a view at 100 blocks, so the
// diff is cut (and says so) and the list is bounded; the CLI shows everything.

/** Action ids of the pin buttons. */
export const PIN_ACTIONS = { accept: "tool_pin_accept", reject: "tool_pin_reject" } as const;

/** Most changes listed with buttons in one view (2 to 3 blocks each). */
export const MAX_HOME_CHANGES = 10;

/** Most characters of diff excerpt in one section (Block Kit's limit is 3,000 with the title). */
export const MAX_DIFF_CHARS = 2_400;

/** Longest tool name a button carries (the value is capped at 2,000 characters by Slack). */
export const MAX_BUTTON_TOOL_CHARS = 256;

/** Lines of unchanged context kept around each change in the excerpt. */
const CONTEXT_LINES = 2;

/** What a pin button carries: the team, service, tool and the hash of the definition shown. */
export function pinButtonValue(p: Pick<ToolPin, "teamId" | "service" | "tool" | "pendingHash">): string {
  return JSON.stringify({ t: p.teamId, s: p.service, n: p.tool, h: p.pendingHash });
}

/** Slack's cap on a section's text. */
const SECTION_CHARS = 3_000;

/** One diff line as inert mrkdwn inside a code block: escaped, and never closing the block. */
const codeLine = (l: string) => esc(l).replace(/```/g, "`\u200b`\u200b`");

/**
 * The changed lines with a little context, as escaped mrkdwn of at most `maxChars`. `omitted`:
 * unchanged lines were left out; `cut`: the excerpt stops short of the changes (Slack's limits).
 */
export function diffExcerpt(
  lines: readonly DiffLine[],
  maxChars = MAX_DIFF_CHARS,
): { text: string; omitted: boolean; cut: boolean } {
  const near = (i: number) =>
    lines.slice(Math.max(0, i - CONTEXT_LINES), i + CONTEXT_LINES + 1).some((l) => l.op !== " ");
  const kept: string[] = [];
  let skipped = false;
  let omitted = false;
  lines.forEach((l, i) => {
    if (l.op !== " " || near(i)) {
      if (skipped) kept.push("  …");
      kept.push(codeLine(`${l.op} ${l.text}`));
      skipped = false;
    } else {
      skipped = true;
      omitted = true;
    }
  });
  if (skipped && kept.length) kept.push("  …");
  let text = "";
  for (const line of kept) {
    const next = text ? `${text}\n${line}` : line;
    if (next.length <= maxChars - 4) {
      text = next;
      continue;
    }
    // Cut inside the line (never inside an escape such as &amp;), then mark the cut.
    const room = maxChars - 4 - text.length - 1;
    const part = room > 0 ? line.slice(0, room).replace(/&[a-z]{0,4}$/, "") : "";
    text = `${text}${text && part ? "\n" : ""}${part}\n  …`;
    return { text, omitted, cut: true };
  }
  return { text, omitted, cut: false };
}

/** `s` cut to `n` characters (Slack caps a confirm dialog's text at 300). */
const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

function button(
  actionId: string,
  label: string,
  value: string,
  style: "primary" | "danger",
  confirm: string,
): types.Button {
  return {
    type: "button",
    action_id: actionId,
    text: { type: "plain_text", text: label },
    style,
    value,
    confirm: {
      title: { type: "plain_text", text: label },
      text: { type: "plain_text", text: confirm },
      confirm: { type: "plain_text", text: label },
      deny: { type: "plain_text", text: "Cancel" },
    },
  };
}

/** The blocks of the admin's tool-change list (none when nothing waits); pass one more than MAX_HOME_CHANGES to learn there are more. */
export function toolChangeBlocks(changes: readonly ToolPin[]): Block[] {
  if (changes.length === 0) return [];
  const blocks: Block[] = [{ type: "header", text: { type: "plain_text", text: "Tool definition changes (admin)" } }];
  for (const p of changes.slice(0, MAX_HOME_CHANGES)) {
    const title = `*${esc(p.service)}* · ${esc(clip(p.tool, 200))} · ${p.status} since ${when(p.changedAt)}`;
    const room = Math.min(MAX_DIFF_CHARS, SECTION_CHARS - title.length - 8);
    const { text, omitted, cut } = diffExcerpt(diffDefinitions(p.pinnedDefinition, p.pendingDefinition), room);
    blocks.push({ type: "section", text: { type: "mrkdwn", text: `${title}\n\`\`\`${text || " "}\`\`\`` } });
    const shown = `Diff of the accepted definition (-) and the waiting one (+), hash ${p.pendingHash?.slice(0, 16) ?? "-"}${omitted ? ", unchanged lines left out" : ""}`;
    blocks.push(
      contextBlock(
        cut
          ? [
              { kind: "text", text: `${shown}; cut to fit Slack: the full diff is in ` },
              { kind: "code", text: "slaude-connect registry changes --diff" },
              { kind: "text", text: "." },
            ]
          : [{ kind: "text", text: `${shown}.` }],
      ),
    );
    if (p.pendingHash === null || p.tool.length > MAX_BUTTON_TOOL_CHARS) continue;
    const value = pinButtonValue(p);
    const name = clip(`${p.service}/${p.tool}`, 120);
    const elements = [
      button(PIN_ACTIONS.accept, "Accept", value, "primary", `Pin this definition of ${name}? Calls to it run again.`),
    ];
    if (p.status !== "rejected")
      elements.push(
        button(
          PIN_ACTIONS.reject,
          "Reject",
          value,
          "danger",
          `Reject this change to ${name}? Calls stay refused while the vendor serves it.`,
        ),
      );
    blocks.push({ type: "actions", elements });
  }
  blocks.push(
    contextBlock([
      {
        kind: "text",
        text: `${changes.length > MAX_HOME_CHANGES ? `More changes wait than the ${MAX_HOME_CHANGES} shown here. ` : ""}Review all and decide from a shell: `,
      },
      { kind: "code", text: "slaude-connect registry changes --diff" },
      { kind: "text", text: ", then " },
      { kind: "code", text: "registry accept" },
      { kind: "text", text: " or " },
      { kind: "code", text: "registry reject SERVICE TOOL" },
      { kind: "text", text: "." },
    ]),
  );
  return blocks;
}
