// The console page: session, tabs, the acting person, and the live event stream that keeps every
// panel current (the page never polls). Each server event names what changed; the panels it
// touches reload from the server, so every open page shows the same state within a second.

import { getJson, listen, openSession } from "./api.js";
import { initCall, onApprovalAsked, onProgress, refreshHistory } from "./call.js";
import { onInbox, refreshInbox } from "./inbox.js";
import { initPanels, onAudit, refreshAudit, refreshConnections } from "./panels.js";
import { initPlay, onThreadNote, refreshServices, refreshThreads } from "./play.js";
import { initTabs } from "./tabs.js";
import { $, debounce, fillSelect, state, toast } from "./ui.js";
import { drawWorkspace } from "./workspace-panel.js";

/**
 * Tabs beyond the built-in ones: modules that call addTab() (./tabs.js) when imported, e.g.
 * "./activity.js". Each is loaded after the page is live.
 */
const TAB_MODULES = ["./activity.js"];

const report = (e) => toast(e.message);

async function loadWorkspace() {
  const w = await getJson("/console/api/workspace");
  state.users = w.users;
  state.channels = w.channels;
  state.actor = fillSelect(
    $("actor"),
    w.users.map((u) => [u.id, `${u.name}${u.admin ? " (admin)" : ""}`]),
    state.actor,
  );
  fillSelect($("audit-user"), [["", "Everyone"], ...w.users.map((u) => [u.id, u.name])], $("audit-user").value);
  drawWorkspace();
}

async function onActor() {
  state.actor = $("actor").value;
  state.inboxUser = state.actor;
  for (const p of document.querySelectorAll("#panel-connections p.answer")) p.textContent = "";
  await Promise.all([refreshInbox(), refreshConnections(), refreshThreads()]);
  await refreshServices();
}

/** Audit events after which what a call gets, or who holds what, may have changed. */
const STANDING_EVENTS = /^(connection_|grant_|login_completed|admin_action|approval_decided|tool_pin)/;
const reloadStanding = debounce(() => {
  refreshServices().catch(report);
  refreshConnections().catch(report);
});
const reloadHistory = debounce(() => refreshHistory().catch(report));

function onAuditRows(d) {
  onAudit(d);
  if (d.rows.some((r) => STANDING_EVENTS.test(r.event))) reloadStanding();
  for (const r of d.rows) if (r.event === "approval_requested") onApprovalAsked(r);
  if (
    d.rows.some(
      (r) =>
        (r.event === "call" || r.event === "call_denied") &&
        r.channelId === state.channelId &&
        r.threadTs === state.threadTs,
    )
  )
    reloadHistory();
}

async function boot() {
  initTabs({ "tab-connections": () => refreshConnections().catch(report) });
  initPlay();
  initCall();
  initPanels();
  const s = await openSession();
  state.teamId = s.teamId;
  state.approvalTimeoutMs = s.approvalTimeoutMs;
  await loadWorkspace();
  state.inboxUser = state.actor;
  await Promise.all([refreshThreads(), refreshInbox(), refreshConnections(), refreshAudit()]);
  await Promise.all([refreshServices(), refreshHistory()]);
  $("actor").addEventListener("change", () => onActor().catch(report));
  listen(
    {
      inbox: onInbox,
      workspace: () =>
        loadWorkspace()
          .then(refreshThreads)
          .then(() => refreshServices())
          .catch(report),
      thread: onThreadNote,
      progress: onProgress,
      audit: onAuditRows,
    },
    (st) => {
      $("live").dataset.state = st;
      $("live").textContent = st === "live" ? "Live" : "Reconnecting…";
      // Whatever happened while the stream was away is read again once it is back.
      if (st === "live" && document.body.dataset.ready)
        Promise.all([refreshInbox(), refreshConnections(), refreshServices(), refreshAudit(), refreshHistory()]).catch(
          report,
        );
    },
  );
  for (const m of TAB_MODULES) await import(m);
  document.body.dataset.ready = "true";
}

boot().catch((err) => toast(`The console could not start: ${err.message}`));
