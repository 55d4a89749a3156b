// The Connections, Workspace and Audit panels (the Inbox is inbox.js).

import { getJson, postJson } from "./api.js";
import { refreshInbox } from "./inbox.js";
import { refreshToolChanges } from "./pins.js";
import { $, el, names, reveal, state, toast, when } from "./ui.js";

// --- connections

function where(c) {
  if (c.scope === "shared") return "as the shared identity";
  if (c.scope === "user") return "everywhere";
  return `for the thread in #${names(c.channelId ?? "")}`;
}

/**
 * A revoke button that asks first, naming exactly what is revoked. The outcome is said under the
 * list (`<list>-status`), which outlives the row: the list is redrawn once the revoke is seen.
 */
function revokeButton(kind, id, label, question, listId) {
  const box = el("span", { class: "revoke" });
  const status = $(`${listId}-status`);
  const b = el("button", { type: "button", class: "danger", text: label });
  const ask = () => {
    const yes = el("button", { type: "button", class: "danger", text: "Yes, revoke" });
    const no = el("button", { type: "button", text: "Cancel" });
    const group = el(
      "span",
      { class: "confirm", role: "group", "aria-label": question },
      el("span", { text: question }),
      yes,
      no,
    );
    no.addEventListener("click", () => {
      group.replaceWith(b);
      b.focus();
    });
    yes.addEventListener("click", async () => {
      yes.disabled = no.disabled = true;
      status.textContent = "Revoking…";
      try {
        const r = await postJson("/console/api/revoke", { kind, id, asUserId: state.actor });
        status.textContent = r.message;
        toast(r.message);
        group.remove();
      } catch (err) {
        status.textContent = err.message;
        group.replaceWith(b);
      }
      reveal(status);
    });
    b.replaceWith(group);
    yes.focus();
  };
  b.addEventListener("click", ask);
  box.append(b);
  return box;
}

/** Redraws a list; a row whose revoke is being confirmed stays as it is (a live update never takes it away). */
function fillList(id, rows, empty, render) {
  const list = $(id);
  const asking = new Map(
    [...list.querySelectorAll("li[data-key]")]
      .filter((li) => li.querySelector(".confirm"))
      .map((li) => [li.dataset.key, li]),
  );
  list.textContent = "";
  for (const r of rows) {
    const li = asking.get(r.id) ?? render(r);
    li.dataset.key = r.id;
    list.append(li);
  }
  if (!rows.length) list.append(el("li", { class: "hint", text: empty }));
}

/** Reloads the acting person's connections and grants (and the team's for an admin). */
export async function refreshConnections() {
  const asked = state.actor;
  const m = await getJson("/console/api/connections", { user: asked });
  if (asked !== state.actor) return; // someone else is acting now
  fillList("my-connections", m.mine, "No connections yet: connect a service from Play a thread.", (c) =>
    el(
      "li",
      {},
      el(
        "span",
        { class: "grow" },
        el("strong", { text: c.service }),
        ` ${where(c)}, ${c.status === "active" ? "active" : "needs a new login"}, expires ${when(c.expiresAt)}`,
      ),
      revokeButton(
        "connection",
        c.id,
        `Revoke my ${c.service} connection`,
        `Revoke your ${c.service} connection ${where(c)}?`,
        "my-connections",
      ),
    ),
  );
  fillList("grants-given", m.grantsGiven, "None.", (g) =>
    el(
      "li",
      {},
      el("span", {
        class: "grow",
        text: `${names(g.borrower)} may use your ${g.service} account in a thread of #${names(g.channelId)}`,
      }),
      revokeButton(
        "grant",
        g.id,
        `Revoke ${names(g.borrower)}'s grant`,
        `Stop ${names(g.borrower)} using your ${g.service} account there?`,
        "grants-given",
      ),
    ),
  );
  fillList("grants-received", m.grantsReceived, "None.", (g) =>
    el(
      "li",
      {},
      el("span", {
        class: "grow",
        text: `You may use ${names(g.owner)}'s ${g.service} account in a thread of #${names(g.channelId)}`,
      }),
      revokeButton(
        "grant",
        g.id,
        `Give back ${names(g.owner)}'s grant`,
        `Give back ${names(g.owner)}'s ${g.service} grant?`,
        "grants-received",
      ),
    ),
  );
  $("admin-box").hidden = !m.admin;
  if (m.admin) {
    fillList("team-connections", m.admin.all, "No connections in the team.", (c) => {
      const whose = c.owner ? `${names(c.owner)}'s` : "the shared";
      return el(
        "li",
        {},
        el(
          "span",
          { class: "grow" },
          el("strong", { text: c.service }),
          ` of ${c.owner ? names(c.owner) : "the shared identity"}, ${where(c)}, ${c.status === "active" ? "active" : "needs a new login"}`,
        ),
        revokeButton(
          "admin",
          c.id,
          `Revoke ${whose} ${c.service} connection`,
          `Revoke ${whose} ${c.service} connection ${where(c)}? Its credential is wiped and its grants end.`,
          "team-connections",
        ),
      );
    });
  }
  await refreshToolChanges(Boolean(m.admin));
}

// --- audit

const AUDIT_EVENTS = [
  "call_started",
  "call",
  "call_denied",
  "approval_requested",
  "approval_decided",
  "approval_rejected_click",
  "grant_created",
  "grant_revoked",
  "connection_created",
  "connection_replaced",
  "connection_revoked",
  "connection_expired",
  "connection_needs_login",
  "connection_refreshed",
  "login_started",
  "login_completed",
  "login_refused",
  "admin_action",
  "tool_pin",
];
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
  const answered =
    r.event === "approval_rejected_click"
      ? "clicked by"
      : r.event === "approval_decided"
        ? "answered by"
        : "approved by";
  const actor =
    r.actor && r.actor !== r.callerUserId && r.actor !== r.approverUserId ? r.actor.replace(/^admin:/, "admin ") : "";
  const who = [
    r.callerUserId && `caller ${names(r.callerUserId)}`,
    r.ownerUserId && `owner ${names(r.ownerUserId)}`,
    r.approverUserId && `${answered} ${names(r.approverUserId)}`,
    actor && `by ${actor.replace(/[A-Z][A-Z0-9_]+$/, (id) => names(id))}`,
  ]
    .filter(Boolean)
    .join(", ");
  const decision = [...new Set([r.decision, r.errorCode].filter(Boolean))].join(", ");
  // Each cell carries its column's name, shown only when rows are stacked (narrow screens).
  const cell = (label, ...kids) =>
    el("td", { role: "cell" }, el("span", { class: "cell-label", "aria-hidden": "true", text: label }), ...kids);
  const at = new Date(r.at);
  return el(
    "tr",
    { role: "row", "data-seq": String(r.seq) },
    cell("When", el("time", { datetime: at.toISOString(), text: at.toLocaleTimeString() })),
    cell("Event", r.event),
    cell("Who", who),
    cell("Service / tool", [r.service, r.tool].filter(Boolean).join(" · ")),
    cell("Decision", decision),
  );
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
  $("audit-empty").hidden = rows.length > 0;
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
  $("audit-empty").hidden = body.rows.length > 0;
}

/** Wires the panels' controls. */
export function initPanels() {
  $("inbox-user").addEventListener("change", () => {
    state.inboxUser = $("inbox-user").value;
    refreshInbox().catch((e) => toast(e.message));
  });
  for (const e of AUDIT_EVENTS) $("audit-event").append(el("option", { value: e, text: e }));
  $("audit-filters").addEventListener("change", () => refreshAudit().catch((e) => toast(e.message)));
  $("audit-filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    refreshAudit().catch((e) => toast(e.message));
  });
}
