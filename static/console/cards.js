// Renders the shared card model (src/cards/card.ts) to HTML. Like the Slack renderer it only
// arranges what the card says: every text goes in as a text node, never as markup.

const el = (tag, props = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== undefined && c !== null) e.append(c);
  return e;
};

/** One span of a card line; `names(id)` writes a user or channel id as a name. */
function span(s, names) {
  switch (s.kind) {
    case "text":
      return document.createTextNode(s.text);
    case "strong":
      return el("strong", { text: s.text });
    case "code":
      return el("code", { text: s.text });
    case "user":
      return el("span", { class: "mention", "data-id": s.userId, text: `@${names(s.userId)}` });
    case "channel":
      return el("span", { class: "mention", "data-id": s.channelId, text: `#${names(s.channelId)}` });
    case "thread":
      return el("span", { class: "thread", "data-thread": `${s.thread.channelId}/${s.thread.threadTs}`, text: s.text });
    case "date": {
      const d = new Date(s.at);
      return el("time", { datetime: d.toISOString(), text: d.toLocaleString() });
    }
    // The console's own controls (Slack names its slash commands here).
    case "howto":
      return document.createTextNode(
        s.howto === "revoke" ? "the Connections tab" : "the Connect button of Play a thread",
      );
    default:
      return document.createTextNode("");
  }
}

/** A card line as a list of nodes. */
export function lineNodes(line, names) {
  return line.map((s) => span(s, names));
}

/** The argument list of an approval card: each name with its type and its value exactly. */
function argsList(args) {
  if (!args) return undefined;
  if (args.shown === "too_large") return el("p", { class: "args-size", text: `Arguments: ${args.count}, not shown.` });
  if (args.args.length === 0) return el("p", { text: "Arguments: none" });
  const dl = el("dl", { class: "args" });
  for (const a of args.args) {
    const notes = [
      a.type,
      ...(a.escaped ? ["escaped"] : []),
      ...(a.redacted ? ["contains your credential, hidden"] : []),
    ];
    dl.append(
      el(
        "dt",
        {},
        el("span", { class: "arg-name", text: a.name === "" ? "(empty name)" : a.name }),
        ` (${notes.join(", ")})`,
      ),
    );
    dl.append(el("dd", {}, el("pre", { class: "arg-value", text: a.text })));
  }
  return dl;
}

/**
 * Renders `card`; `onAction(action, button)` is called for each button click. `names(id)` writes
 * people and channels by name.
 */
export function renderCard(card, { names = (id) => id, onAction = () => {} } = {}) {
  const titleId = `card-${Math.random().toString(36).slice(2)}`;
  const root = el("article", { class: `card card-${card.kind}`, "aria-labelledby": titleId });
  root.append(el("h3", { id: titleId, class: "title" }, ...lineNodes(card.title, names)));
  for (const line of card.lines) root.append(el("p", { class: "line" }, ...lineNodes(line, names)));
  if (card.tool)
    root.append(
      el(
        "p",
        { class: "tool" },
        "Tool: ",
        el("code", { class: "tool-name", text: card.tool.name }),
        card.tool.write ? " (write)" : " (read)",
      ),
    );
  const args = argsList(card.args);
  if (args) root.append(args);
  if (card.notice) root.append(el("p", { class: "notice", role: "note" }, ...lineNodes(card.notice, names)));
  if (card.footer) root.append(el("p", { class: "footer" }, ...lineNodes(card.footer, names)));
  if (card.actions.length) {
    const bar = el("div", { class: "actions", role: "group", "aria-label": "Answers" });
    for (const a of card.actions) {
      if (a.id === "open_login" && a.url) {
        bar.append(
          el("a", { class: "button action", href: a.url, target: "_blank", rel: "noopener noreferrer", text: a.label }),
        );
        continue;
      }
      const b = el("button", {
        type: "button",
        class: `action ${a.style ?? ""}`.trim(),
        "data-action": a.id,
        text: a.label,
      });
      b.addEventListener("click", () => onAction(a, b));
      bar.append(b);
    }
    root.append(bar);
  }
  return root;
}
