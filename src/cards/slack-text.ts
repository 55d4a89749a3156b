import type { CardLine, CardSpan } from "../domain/card.js";

// The broker's answers to a model are Slack text (the model writes them into a Slack thread), so
// they carry Slack's markup: `<@U…>` mentions, `<#C…|name>` channels, `<!here>`, `<url|label>`,
// `&lt;` escapes. A surface that is not Slack reads them through this, into the card model's
// spans: a mention becomes a user span its renderer writes as a name, never the raw markup.

/** Most characters read; the rest is cut (a result text is bounded long before this). */
const MAX_CHARS = 200_000;

const unescapeSlack = (s: string): string => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

/** A Slack special mention (`here`, `channel`, `everyone`, `subteam^ID|@team`) as plain words. */
function special(body: string): string {
  const [name, label] = body.split("|", 2);
  if (label) return label;
  if (name === "here" || name === "channel" || name === "everyone") return `@${name}`;
  // <!date^…|fallback> without a label has no readable form: its token is not a word.
  return name?.startsWith("date^") ? "" : `@${(name ?? "").split("^")[0]}`;
}

/** One `<…>` token as a span. */
function token(body: string): CardSpan {
  if (body.startsWith("@")) {
    const [userId] = body.slice(1).split("|", 1);
    return { kind: "user", userId: userId ?? "" };
  }
  if (body.startsWith("#")) {
    const [channelId] = body.slice(1).split("|", 1);
    return { kind: "channel", channelId: channelId ?? "" };
  }
  if (body.startsWith("!")) return { kind: "text", text: special(body.slice(1)) };
  const bar = body.indexOf("|");
  return { kind: "text", text: unescapeSlack(bar >= 0 ? body.slice(bar + 1) : body) };
}

/** Slack text as a card line: mentions as user and channel spans, links as their labels, escapes undone. */
export function slackTextLine(text: string): CardLine {
  const s = text.slice(0, MAX_CHARS);
  const spans: CardSpan[] = [];
  const re = /<([^<>\s][^<>]*)>/g;
  let last = 0;
  for (const m of s.matchAll(re)) {
    if (m.index > last) spans.push({ kind: "text", text: unescapeSlack(s.slice(last, m.index)) });
    spans.push(token(m[1]!));
    last = m.index + m[0].length;
  }
  if (last < s.length) spans.push({ kind: "text", text: unescapeSlack(s.slice(last)) });
  return spans;
}
