// The console page: session, tabs, the acting person, and the live event stream that keeps every
// panel current (the page never polls).

import { getJson, listen, openSession } from "./api.js";
import { drawWorkspace, initPanels, onAudit, onInbox, refreshAudit, refreshConnections, refreshInbox } from "./panels.js";
import { initPlay, onProgress, onThreadNote, refreshServices, refreshThreads } from "./play.js";
import { $, fillSelect, state, toast } from "./ui.js";

const tabs = [...document.querySelectorAll('[role="tab"]')];

function select(tab, focus = false) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
  if (focus) tab.focus();
  if (tab.id === "tab-connections") refreshConnections().catch((e) => toast(e.message));
}

function initTabs() {
  for (const t of tabs) {
    t.addEventListener("click", () => select(t));
    t.addEventListener("keydown", (e) => {
      const i = tabs.indexOf(t);
      const next = e.key === "ArrowRight" ? tabs[(i + 1) % tabs.length] : e.key === "ArrowLeft" ? tabs[(i - 1 + tabs.length) % tabs.length] : e.key === "Home" ? tabs[0] : e.key === "End" ? tabs[tabs.length - 1] : undefined;
      if (next) { e.preventDefault(); select(next, true); }
    });
  }
}

async function loadWorkspace() {
  const w = await getJson("/console/api/workspace");
  state.users = w.users;
  state.channels = w.channels;
  state.actor = fillSelect($("actor"), w.users.map((u) => [u.id, `${u.name}${u.admin ? " (admin)" : ""}`]), state.actor);
  fillSelect($("audit-user"), [["", "Everyone"], ...w.users.map((u) => [u.id, u.name])], $("audit-user").value);
  drawWorkspace();
}

async function onActor() {
  state.actor = $("actor").value;
  state.inboxUser = state.actor;
  await Promise.all([refreshInbox(), refreshConnections(), refreshThreads()]);
  await refreshServices();
}

async function boot() {
  initTabs();
  initPlay();
  initPanels();
  const s = await openSession();
  state.teamId = s.teamId;
  await loadWorkspace();
  state.inboxUser = state.actor;
  await Promise.all([refreshThreads(), refreshInbox(), refreshConnections(), refreshAudit()]);
  $("actor").addEventListener("change", () => onActor().catch((e) => toast(e.message)));
  listen(
    {
      inbox: onInbox,
      workspace: () => loadWorkspace().then(refreshThreads).catch((e) => toast(e.message)),
      thread: onThreadNote,
      progress: onProgress,
      audit: (d) => {
        onAudit(d);
        if (d.rows.some((r) => /^(connection_|grant_|login_completed|admin_action|tool_pin)/.test(r.event))) refreshConnections().catch(() => {});
      },
    },
    (st) => {
      $("live").dataset.state = st;
      $("live").textContent = st === "live" ? "Live" : "Reconnecting…";
    },
  );
  document.body.dataset.ready = "true";
}

boot().catch((err) => toast(`The console could not start: ${err.message}`));
