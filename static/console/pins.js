// The Tool changes panel (admins only): each tool whose vendor now serves another definition than
// the pinned one (quarantined), a new tool (unpinned) or a rejected change, with the line diff of
// the accepted definition (-) and the waiting one (+). Accept and Reject name the waiting
// definition's hash, so the server decides on exactly the definition shown here, or refuses.

import { getJson, postJson } from "./api.js";
import { $, el, state, toast, when } from "./ui.js";

const STATUS = {
  quarantined: "quarantined: calls refused until an admin decides",
  new: "new: unreviewed, refused until accepted (unless the service trusts new tools)",
  rejected: "change rejected: calls refused while the vendor serves it",
};

function diffBlock(lines) {
  const pre = el("pre", { class: "diff" });
  for (const l of lines)
    pre.append(
      el("span", { class: l.op === "+" ? "add" : l.op === "-" ? "del" : "same", text: `${l.op} ${l.text}\n` }),
    );
  return pre;
}

function decideButton(c, kind, answer) {
  const label = kind === "accept" ? `Accept ${c.service}/${c.tool}` : `Reject ${c.service}/${c.tool}`;
  const b = el("button", {
    type: "button",
    class: kind === "accept" ? "primary" : "danger",
    text: kind === "accept" ? "Accept" : "Reject",
    "aria-label": label,
  });
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      const r = await postJson("/console/api/tool-decision", {
        kind,
        service: c.service,
        tool: c.tool,
        hash: c.pendingHash,
        asUserId: state.actor,
      });
      toast(r.message);
      await refreshToolChanges();
    } catch (err) {
      answer.textContent = err.message;
      toast(err.message);
      b.disabled = false;
    }
  });
  return b;
}

function changeItem(c) {
  const answer = el("p", { class: "answer", role: "status" });
  const actions = el("div", { class: "actions" });
  if (c.pendingHash) {
    actions.append(decideButton(c, "accept", answer));
    if (c.status !== "rejected") actions.append(decideButton(c, "reject", answer));
  }
  return el(
    "li",
    { class: "card", "data-tool": `${c.service}/${c.tool}`, "data-status": c.status },
    el("h4", {}, el("strong", { text: `${c.service} · ${c.tool}` })),
    el("p", { text: `${STATUS[c.status] ?? c.status}, since ${when(c.changedAt)}` }),
    el("p", {
      class: "footer",
      text: `accepted ${c.pinnedHash ? c.pinnedHash.slice(0, 16) : "never"} · waiting ${c.pendingHash ? c.pendingHash.slice(0, 16) : "-"}`,
    }),
    diffBlock(c.diff),
    actions,
    answer,
  );
}

/** Shows the panel to an admin (hidden for anyone else) and reloads its list. */
export async function refreshToolChanges(isAdmin = !$("pins-box").hidden) {
  const box = $("pins-box");
  box.hidden = !isAdmin;
  if (!isAdmin) return;
  const asked = state.actor;
  const { changes } = await getJson("/console/api/tool-changes", { user: asked });
  if (asked !== state.actor) return; // someone else is acting now
  const list = $("tool-changes");
  list.textContent = "";
  for (const c of changes) list.append(changeItem(c));
  if (!changes.length)
    list.append(el("li", { class: "hint", text: "No tool definition changes wait for a decision." }));
}
