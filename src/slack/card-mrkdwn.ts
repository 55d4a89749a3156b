import { type Card, type CardLine, type CardSpan, howtoText } from "../domain/card.js";
import type { Block } from "./slack-api.js";

// Slack's renderer of card text: each span becomes mrkdwn, every piece of text escaped (inert), so
// only our own formatting (bold, code, mentions, links, dates) is ever interpreted by Slack.

/** Escapes Slack mrkdwn control characters in user-derived text. */
export function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A Slack date token (shown in the reader's time zone) with an ISO fallback. */
export function when(ms: number): string {
  const secs = Math.floor(ms / 1000);
  return `<!date^${secs}^{date_short_pretty} {time}|${new Date(ms).toISOString()}>`;
}

/** A card line as Slack mrkdwn. */
export function mrkdwnLine(line: CardLine): string {
  return line.map(mrkdwnSpan).join("");
}

/** One span as Slack mrkdwn; the switch is exhaustive, so a new span kind fails the typecheck here. */
function mrkdwnSpan(s: CardSpan): string {
  switch (s.kind) {
    case "text":
      return esc(s.text);
    case "strong":
      return `*${esc(s.text)}*`;
    case "code":
      return `\`${esc(s.text)}\``;
    case "user":
      return `<@${s.userId}>`;
    case "channel":
      return `<#${s.channelId}>`;
    case "thread":
      return `<https://slack.com/app_redirect?team=${s.thread.teamId}&channel=${s.thread.channelId}&message_ts=${s.thread.threadTs}|${esc(s.text)}>`;
    case "date":
      return when(s.at);
    case "howto":
      return esc(howtoText(s.howto, s.service, "slack"));
  }
}

/** A Slack section block of mrkdwn text. */
export function mrkdwnSection(text: string): Block {
  return { type: "section", text: { type: "mrkdwn", text } };
}

/** A Slack context block of one mrkdwn line. */
export function contextBlock(line: CardLine): Block {
  return { type: "context", elements: [{ type: "mrkdwn", text: mrkdwnLine(line) }] };
}

/** A text-only notice (ready, needs login, revoked, expired) as one Slack message text. */
export function noticeText(card: Card): string {
  return card.lines.map(mrkdwnLine).join("\n");
}

/** Slack's notification text of a card: its summary, else its title. */
export function notificationText(card: Card): string {
  return mrkdwnLine(card.summary ?? card.title);
}
