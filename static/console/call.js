// The call form and the runs of "Play a thread" (the arguments themselves: args-form.js). Each
// run shows its progress where it was started, including the time left while the broker waits
// for an owner's approval; the thread's past runs come from the audit.

import { getJson } from "./api.js";
import { buildForm, fieldArgs, jsonArgs, setJsonMode, toggleJson } from "./args-form.js";
import { lineNodes } from "./cards.js";
import { describeTool, hostCall } from "./play.js";
import { $, el, names, newRunId, reveal, state, toast } from "./ui.js";

let runCount = 0;
let chosen = null; // { service, tool, schema }

/** Picks a tool for the call form. */
export async function chooseTool(service, tool) {
  const { tool: t, note } = await describeTool(service, tool);
  chosen = { service, tool, schema: t.inputSchema };
  $("call-target").textContent = `${service} · ${tool}`;
  buildForm(chosen.schema);
  $("json-mode").checked = !chosen.schema;
  setJsonMode(!chosen.schema);
  // Before any vendor of the service ran, the broker knows the tool's name and class, not its schema.
  $("schema-note").textContent = chosen.schema
    ? ""
    : (note ?? "The input schema is not known yet (no vendor of this service has run): write the arguments as JSON.");
  $("run").disabled = false;
  $("run").textContent = `Run ${tool}`;
  $("call-hint").hidden = true;
  reveal($("call-h"));
}

// --- runs

const HOW = {
  own: () => "Ran on your own account",
  grant: (o) => `Ran on ${o}'s account (their thread grant)`,
  approval_thread: (o) => `Ran on ${o}'s account (${o} allowed it for this thread)`,
  approval_once: (o) => `Ran on ${o}'s account (${o} allowed it once)`,
  shared: () => "Ran with the service's shared identity",
};

function describeOutcome(r) {
  if (r.kind === "host_error") return { state: "error", status: `Not run: ${r.message}` };
  const s = r.structured ?? {};
  if (s.status === "ok" && s.ranAs) {
    const owner = s.connectionOwner ? names(s.connectionOwner) : "the shared identity";
    return {
      state: r.isError ? "error" : "ok",
      status: r.isError ? "The vendor tool reported an error." : "Done.",
      how: (HOW[s.ranAs] ?? (() => `Ran as ${s.ranAs}`))(owner),
    };
  }
  if (s.status === "refused" || s.status === "needs_connect")
    return { state: "refused", status: `Not run: ${s.code}`, code: s.code, message: r.messageLine };
  return {
    state: r.isError ? "error" : "ok",
    message: r.messageLine ?? r.textLine,
    status: r.isError ? "Failed." : "Done.",
  };
}

const plain = (line) => (line ?? []).map((s) => s.text ?? "").join("");

/**
 * Runs one broker tool as the acting person; its article goes `into` a container next to the
 * control that started it (the call form's result slot by default). Returns it and its end.
 */
export function run(tool, args, label, { into = $("call-result") } = {}) {
  const n = ++runCount;
  const runId = newRunId();
  const who = names(state.actor);
  const head = el("h4", { id: `run-${n}-h`, text: `Run ${n}: ${who} · ${label}` });
  const status = el("p", { class: "status", role: "status", text: "Running…" });
  const item = el(
    "article",
    {
      class: "run",
      "data-state": "running",
      "data-run": runId,
      "data-actor": state.actor,
      "data-thread": `${state.channelId}/${state.threadTs}`,
      "aria-labelledby": head.id,
    },
    head,
    status,
  );
  // The previous result next to this control moves to the run list below.
  for (const old of [...into.children]) $("runs").prepend(el("li", {}, old));
  into.append(item);
  const done = hostCall(tool, args, runId)
    .then((r) => {
      const d = describeOutcome(r);
      item.dataset.state = d.state;
      if (d.code) item.dataset.code = d.code;
      status.textContent = d.status;
      if (d.how) item.append(el("p", { class: "how", text: d.how }));
      if (d.message) item.append(el("p", { class: "message" }, ...lineNodes(d.message, names)));
      if (r.kind === "result" && r.text && plain(r.textLine) !== plain(d.message))
        item.append(el("pre", { class: "text" }, ...lineNodes(r.textLine ?? [], names)));
      if (r.kind === "result" && r.structured)
        item.append(
          el(
            "details",
            {},
            el("summary", { text: "Structured result" }),
            el("pre", { text: JSON.stringify(r.structured, null, 2) }),
          ),
        );
    })
    .catch((err) => {
      item.dataset.state = "error";
      status.textContent = `Not run: ${err.message}`;
    })
    .finally(() => {
      stopWait(item);
      reveal(item);
    });
  return { item, done };
}

const waits = new Map(); // run id → timer of its countdown

function stopWait(item) {
  clearInterval(waits.get(item.dataset.run));
  waits.delete(item.dataset.run);
  item.querySelector(".wait")?.remove();
}

/** The owner was asked (an audit row): the asking run shows the time left until the request expires. */
export function onApprovalAsked(row) {
  const item = [...document.querySelectorAll('article.run[data-state="running"]')].find(
    (a) => a.dataset.actor === row.callerUserId && a.dataset.thread === `${row.channelId}/${row.threadTs}`,
  );
  if (!item || waits.has(item.dataset.run) || !state.approvalTimeoutMs) return;
  const deadline = row.at + state.approvalTimeoutMs;
  const bar = el("progress", { max: String(state.approvalTimeoutMs), "aria-label": "Time left for the answer" });
  const text = el("span");
  const box = el("p", { class: "wait" }, text, " ", bar);
  item.querySelector(".status").after(box);
  const tick = () => {
    const left = Math.max(0, deadline - Date.now());
    bar.value = left;
    const m = Math.floor(left / 60_000);
    const s = String(Math.floor((left % 60_000) / 1000)).padStart(2, "0");
    text.textContent = `Waiting for ${names(row.ownerUserId)} to approve ${row.tool ?? "the call"}: ${m}:${s} left.`;
  };
  tick();
  waits.set(item.dataset.run, setInterval(tick, 1000));
  reveal(box);
}

/** A progress notification of a run (the broker's heartbeat while it waits). */
export function onProgress(p) {
  const item = document.querySelector(`[data-run="${CSS.escape(p.runId)}"]`);
  if (item?.dataset.state !== "running") return;
  const status = item.querySelector(".status");
  status.textContent = "Running… ";
  if (p.messageLine) status.append(...lineNodes(p.messageLine, names));
  else status.append(`(${p.progress}${p.total ? `/${p.total}` : ""})`);
}

// --- the thread's past runs, from the audit

const VIA = {
  own: "own account",
  grant: "thread grant",
  approval_thread: "allowed for the thread",
  approval_once: "allowed once",
  shared: "shared identity",
};

function historyItem(r) {
  const who = names(r.callerUserId ?? "");
  const on = r.ownerUserId && r.ownerUserId !== r.callerUserId ? ` on ${names(r.ownerUserId)}'s account` : "";
  const outcome =
    r.event === "call_denied"
      ? `not run: ${r.errorCode ?? r.decision ?? "refused"}`
      : r.errorCode
        ? `failed: ${r.errorCode}`
        : `ran${on} (${VIA[r.decision] ?? r.decision ?? "run"})`;
  const t = new Date(r.at);
  return el(
    "li",
    { "data-seq": String(r.seq), "data-event": r.event },
    el("time", { datetime: t.toISOString(), text: t.toLocaleTimeString() }),
    ` ${who} · ${[r.service, r.tool].filter(Boolean).join(" · ")}: ${outcome}${r.durationMs != null ? `, ${r.durationMs} ms` : ""}`,
  );
}

/** Reloads the chosen thread's past calls (every page's, kept across reloads by the audit). */
export async function refreshHistory() {
  const list = $("history");
  if (!state.threadTs) {
    list.textContent = "";
    return void list.append(el("li", { class: "hint", text: "No thread chosen." }));
  }
  const asked = state.threadTs;
  const { rows } = await getJson("/console/api/runs", { channel: state.channelId, ts: asked });
  if (asked !== state.threadTs) return;
  list.textContent = "";
  for (const r of rows) list.append(historyItem(r));
  if (!rows.length) list.append(el("li", { class: "hint", text: "No calls in this thread yet." }));
}

/** Wires the call form. */
export function initCall() {
  $("json-mode").addEventListener("change", toggleJson);
  $("call-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!chosen) return;
    let args;
    try {
      args = $("json-mode").checked ? jsonArgs() : fieldArgs();
    } catch (err) {
      err.field?.focus();
      return toast(err.message);
    }
    const { item } = run(
      "mcp_call",
      { service: chosen.service, tool: chosen.tool, args, on_behalf_of: state.actor },
      `${chosen.service} · ${chosen.tool}`,
    );
    reveal(item);
  });
}
