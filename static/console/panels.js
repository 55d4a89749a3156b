// The Inbox, Connections, Workspace and Audit panels. Cards come from the server as the shared
// card model and are rendered by cards.js; the page adds nothing to what they say.

import { getJson, postJson } from "./api.js";
import { renderCard } from "./cards.js";
import { refreshToolChanges } from "./pins.js";
import { $, el, fillSelect, names, state, toast, when } from "./ui.js";

// --- inbox

const inboxItems = new Map(); // item id → item, of the inbox shown

function cardItem(item) {
  const answer = el("p", { class: "answer", role: "status" });
  const card = renderCard(item.card, { names, onAction: (a, button) => act(item, a, button, answer) });
  card.dataset.state = item.state;
  card.dataset.item = item.id;
  if (item.state === "settled") for (const b of card.querySelectorAll("button")) b.disabled = true;
  card.append(answer);
  return el("li", { "data-item": item.id }, card);
}

async function act(item, action, button, answer) {
  if (action.id === "continue") {
    // Opened inside the click (a popup needs the user's gesture), pointed at the link once minted.
    const w = window.open("", "_blank");
    if (w) w.opener = null;
    try {
      const { url } = await postJson("/console/api/continue", { itemId: item.id, asUserId: state.actor });
      if (w) w.location.href = url;
      answer.textContent = "The sign-in page opened in a new tab.";
      answer.append(" ", el("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: "Open it again" }));
    } catch (err) {
      w?.close();
      answer.textContent = err.message;
    }
    return;
  }
  button.disabled = true;
  try {
    const r = await postJson("/console/api/decide", { approvalId: item.approvalId, decision: action.id, asUserId: state.actor });
    answer.textContent = r.result === "applied" ? `${names(state.actor)} answered: ${action.label}.` : r.message;
    if (r.result !== "applied") toast(r.message);
  } catch (err) {
    answer.textContent = err.message;
  } finally {
    button.disabled = false;
  }
}

function drawInbox() {
  const list = $("inbox");
  list.textContent = "";
  const items = [...inboxItems.values()].sort((a, b) => b.at - a.at);
  for (const item of items) list.append(cardItem(item));
  if (!items.length) list.append(el("li", { class: "hint", text: `${names(state.inboxUser)} has no cards.` }));
  const open = items.filter((i) => i.state === "open").length;
  $("inbox-count").textContent = open ? String(open) : "";
  $("inbox-count").setAttribute("aria-label", open ? `${open} open` : "");
}

/** Reloads the inbox shown. */
export async function refreshInbox() {
  state.inboxUser = fillSelect($("inbox-user"), state.users.map((u) => [u.id, u.name]), state.inboxUser || state.actor);
  const asked = state.inboxUser;
  const { items } = await getJson("/console/api/inbox", { user: asked });
  if (asked !== state.inboxUser) return; // another inbox was chosen meanwhile
  inboxItems.clear();
  for (const i of items) inboxItems.set(i.id, i);
  drawInbox();
}

/** A card pushed by the server: shown at once when it is in the inbox shown. */
export function onInbox(e) {
  if (e.userId !== state.inboxUser) return;
  const shown = $("inbox").querySelector(`li[data-item="${CSS.escape(e.item.id)}"]`);
  inboxItems.set(e.item.id, e.item);
  if (shown && e.item.state === "open") return; // keep an open card (and its answer line) as it is
  drawInbox();
}

// --- connections

function revokeButton(kind, id, label) {
  const b = el("button", { type: "button", class: "danger", text: label });
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      const r = await postJson("/console/api/revoke", { kind, id, asUserId: state.actor });
      toast(r.message);
      await refreshConnections();
    } catch (err) {
      toast(err.message);
      b.disabled = false;
    }
  });
  return b;
}

function where(c) {
  if (c.scope === "shared") return "shared identity";
  if (c.scope === "user") return "everywhere";
  return `thread ${c.channelId ? "#" + names(c.channelId) : ""}/${c.threadTs ?? ""}`;
}

function fillList(id, rows, empty, render) {
  const list = $(id);
  list.textContent = "";
  for (const r of rows) list.append(render(r));
  if (!rows.length) list.append(el("li", { class: "hint", text: empty }));
}

/** Reloads the acting person's connections and grants (and the team's for an admin). */
export async function refreshConnections() {
  const asked = state.actor;
  const m = await getJson("/console/api/connections", { user: asked });
  if (asked !== state.actor) return; // someone else is acting now
  fillList("my-connections", m.mine, "No connections.", (c) =>
    el("li", {}, el("span", { class: "grow" }, el("strong", { text: c.service }), ` ${where(c)}, ${c.status}, expires ${when(c.expiresAt)}`), revokeButton("connection", c.id, `Revoke my ${c.service} connection`)));
  fillList("grants-given", m.grantsGiven, "None.", (g) =>
    el("li", {}, el("span", { class: "grow", text: `${names(g.borrower)} may use your ${g.service} account in #${names(g.channelId)}/${g.threadTs}` }), revokeButton("grant", g.id, `Revoke ${names(g.borrower)}'s grant`)));
  fillList("grants-received", m.grantsReceived, "None.", (g) =>
    el("li", {}, el("span", { class: "grow", text: `You may use ${names(g.owner)}'s ${g.service} account in #${names(g.channelId)}/${g.threadTs}` }), revokeButton("grant", g.id, `Give back ${names(g.owner)}'s grant`)));
  $("admin-box").hidden = !m.admin;
  if (m.admin) {
    fillList("team-connections", m.admin.all, "No connections in the team.", (c) =>
      el("li", {}, el("span", { class: "grow" }, el("strong", { text: c.service }), ` of ${c.owner ? names(c.owner) : "the shared identity"}, ${where(c)}, ${c.status}`), revokeButton("admin", c.id, `Revoke ${c.owner ? names(c.owner) + "'s" : "the shared"} ${c.service} connection`)));
  }
  await refreshToolChanges(Boolean(m.admin));
}

// --- workspace

/** Redraws people and channel membership. */
export function drawWorkspace() {
  fillList("users", state.users, "Nobody.", (u) => el("li", {}, el("strong", { text: u.name }), ` ${u.id}`, u.admin ? el("span", { class: "badge", text: "admin" }) : null));
  const box = $("channels");
  box.textContent = "";
  for (const c of state.channels) {
    const fs = el("fieldset", {}, el("legend", { text: `#${c.name} members` }));
    for (const u of state.users) {
      const cb = el("input", { type: "checkbox", id: `m-${c.id}-${u.id}` });
      cb.checked = c.members.includes(u.id);
      cb.addEventListener("change", async () => {
        try {
          await postJson("/console/api/membership", { channelId: c.id, userId: u.id, member: cb.checked });
          toast(`${u.name} ${cb.checked ? "joined" : "left"} #${c.name}; the next call sees it.`);
        } catch (err) {
          cb.checked = !cb.checked;
          toast(err.message);
        }
      });
      fs.append(el("label", { class: "check", for: cb.id }, cb, `${u.name} is a member of #${c.name}`));
    }
    box.append(fs);
  }
}

// --- audit

const AUDIT_EVENTS = ["call_started", "call", "call_denied", "approval_requested", "approval_decided", "approval_rejected_click", "grant_created", "grant_revoked", "connection_created", "connection_replaced", "connection_revoked", "connection_expired", "connection_needs_login", "connection_refreshed", "login_started", "login_completed", "login_refused", "admin_action", "tool_pin"];
const MAX_AUDIT_ROWS = 500;
const shownSeqs = new Set();

function auditFilters() {
  return { event: $("audit-event").value, user: $("audit-user").value, service: $("audit-service").value.trim() };
}

function matches(r, f) {
  if (f.event && r.event !== f.event) return false;
  if (f.service && r.service !== f.service) return false;
  if (f.user && ![r.callerUserId, r.ownerUserId, r.approverUserId, r.actor].includes(f.user)) return false;
  return true;
}

function auditRow(r) {
  const answered = r.event === "approval_rejected_click" ? "clicked by" : r.event === "approval_decided" ? "answered by" : "approved by";
  const actor = r.actor && r.actor !== r.callerUserId && r.actor !== r.approverUserId ? r.actor.replace(/^admin:/, "admin ") : "";
  const who = [r.callerUserId && `caller ${names(r.callerUserId)}`, r.ownerUserId && `owner ${names(r.ownerUserId)}`, r.approverUserId && `${answered} ${names(r.approverUserId)}`, actor && `by ${actor.replace(/[A-Z][A-Z0-9_]+$/, (id) => names(id))}`].filter(Boolean).join(", ");
  return el("tr", { "data-seq": String(r.seq) }, el("td", {}, el("time", { datetime: new Date(r.at).toISOString(), text: new Date(r.at).toLocaleTimeString() })), el("td", { text: r.event }), el("td", { text: who }), el("td", { text: [r.service, r.tool].filter(Boolean).join(" · ") }), el("td", { text: [r.decision, r.errorCode].filter(Boolean).join(" ") }));
}

/** Reloads the audit table with the filters. */
export async function refreshAudit() {
  const f = auditFilters();
  const { rows } = await getJson("/console/api/audit", { ...f, limit: "200" });
  const body = $("audit").tBodies[0];
  body.textContent = "";
  shownSeqs.clear();
  for (const r of rows.reverse()) {
    shownSeqs.add(r.seq);
    body.append(auditRow(r));
  }
}

/** New audit rows pushed by the server: prepended when they pass the filters. */
export function onAudit({ rows }) {
  const f = auditFilters();
  const body = $("audit").tBodies[0];
  for (const r of rows) {
    if (shownSeqs.has(r.seq) || !matches(r, f)) continue;
    shownSeqs.add(r.seq);
    body.prepend(auditRow(r));
  }
  while (body.rows.length > MAX_AUDIT_ROWS) body.deleteRow(-1);
}

/** Wires the panels' controls. */
export function initPanels() {
  $("inbox-user").addEventListener("change", () => { state.inboxUser = $("inbox-user").value; refreshInbox().catch((e) => toast(e.message)); });
  for (const e of AUDIT_EVENTS) $("audit-event").append(el("option", { value: e, text: e }));
  $("audit-filters").addEventListener("change", () => refreshAudit().catch((e) => toast(e.message)));
  $("audit-filters").addEventListener("submit", (ev) => { ev.preventDefault(); refreshAudit().catch((e) => toast(e.message)); });
}
