// "Play a thread": the reader picks a channel and a thread and acts as a person there. Every
// action is a real tool call of the broker made by the console's server-side agent host (one turn
// reported on /v1/turns, one MCP session on /mcp); this page only shows what the broker answered.

import { getJson, postJson } from "./api.js";
import { $, el, fillSelect, names, state, toast, when } from "./ui.js";

let runCount = 0;
let chosen = null; // { service, tool, schema }

/** One broker tool call as the acting person in the chosen thread. */
async function hostCall(tool, args, runId = newRunId()) {
  if (!state.threadTs) throw new Error("Start or choose a thread first.");
  return postJson("/console/api/host", { channelId: state.channelId, threadTs: state.threadTs, userId: state.actor, tool, arguments: args, runId });
}

function newRunId() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return "run_" + btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The structured answer of a host call, or an Error with the refusal's message. */
function structured(r) {
  if (r.kind === "host_error") throw new Error(r.message);
  return r.structured ?? {};
}

// --- channels and threads

/** Refills the channel and thread pickers from the workspace. */
export async function refreshThreads() {
  state.channelId = fillSelect($("channel"), state.channels.map((c) => [c.id, "#" + c.name]), state.channelId);
  if (!state.channelId) return;
  const { threads } = await getJson("/console/api/threads", { channel: state.channelId });
  const opts = threads.map((t) => [t.thread.threadTs, `${names(t.startedBy)}'s thread, ${when(t.at)}`]);
  state.threadTs = fillSelect($("thread"), opts.length ? opts : [["", "No thread yet"]], state.threadTs);
  await refreshNotes();
}

async function refreshNotes() {
  const list = $("notes");
  list.textContent = "";
  $("thread-info").textContent = `${state.threadTs ? `Thread ${state.channelId}/${state.threadTs}` : "No thread yet: start one"}; calls run as ${names(state.actor)}.`;
  if (!state.threadTs) return;
  const asked = state.threadTs;
  const { notes } = await getJson("/console/api/notes", { channel: state.channelId, ts: asked });
  if (asked !== state.threadTs) return; // another thread was chosen meanwhile
  list.textContent = "";
  for (const n of notes) addNote(n);
}

function addNote(n) {
  $("notes").append(el("li", {}, el("time", { datetime: new Date(n.at).toISOString(), text: new Date(n.at).toLocaleTimeString() }), " ", n.text));
}

/** A thread note pushed by the server: shown when it belongs to the open thread. */
export function onThreadNote(e) {
  if (e.thread.channelId === state.channelId && e.thread.threadTs === state.threadTs) addNote(e);
}

// --- services, connections and tools

/** Reloads the services and what the acting person can use in the thread. */
export async function refreshServices() {
  const box = $("services");
  box.textContent = "";
  if (!state.threadTs) return void box.append(el("li", { class: "hint", text: "Start or choose a thread first." }));
  const asked = `${state.actor} ${state.threadTs}`;
  const [described, listed] = await Promise.all([hostCall("mcp_describe", {}), hostCall("connections_list", {})]);
  if (asked !== `${state.actor} ${state.threadTs}`) return; // someone else acts now, or another thread
  box.textContent = "";
  const services = structured(described).services ?? [];
  const conns = structured(listed).connections ?? [];
  fillSelect($("service"), services.map((s) => [s.name, s.displayName]), $("service").value);
  for (const s of services) {
    const mine = conns.filter((c) => c.service === s.name && c.mine);
    const others = conns.filter((c) => c.service === s.name && !c.mine);
    const facts = [
      mine.length ? `your connection (${mine.map((c) => c.status).join(", ")})` : "not connected by you",
      ...others.map((c) => (c.owner ? `${names(c.owner)}'s (${c.grant === "granted" ? "granted to you" : "needs approval"})` : "shared identity")),
    ];
    const connect = el("button", { type: "button", text: `Connect ${s.displayName}` });
    connect.addEventListener("click", () => run("connect", { service: s.name }, `connect ${s.name}`));
    box.append(el("li", {}, el("span", { class: "grow" }, el("strong", { text: s.displayName }), ` (${s.name}): ${facts.join("; ")}`), connect));
  }
  if (!services.length) box.append(el("li", { text: "No services in the registry." }));
}

async function searchTools(ev) {
  ev.preventDefault();
  const service = $("service").value;
  if (!service) return toast("Refresh the services first.");
  const q = $("tool-query").value.trim();
  const r = structured(await hostCall("mcp_describe", q ? { service, query: q } : { service }));
  if (r.status !== "ok") return toast(r.message ?? "The broker refused.");
  const list = $("tools");
  list.textContent = "";
  for (const t of r.tools ?? []) {
    const cls = [t.class?.access, t.class?.write ? "write" : "read"].filter(Boolean).join(", ");
    const pick = el("button", { type: "button", text: `Use ${t.name}` });
    pick.addEventListener("click", () => chooseTool(service, t.name));
    list.append(el("li", {}, el("span", { class: "grow" }, el("code", { text: t.name }), " ", el("span", { class: "badge", text: cls }), el("br"), t.description ?? ""), pick));
  }
  if (!(r.tools ?? []).length) list.append(el("li", { text: "No tool matches." }));
}

async function chooseTool(service, tool) {
  const r = structured(await hostCall("mcp_describe", { service, tool }));
  if (r.status !== "ok") return toast(r.message ?? "The broker refused.");
  const t = (r.tools ?? []).find((x) => x.name === tool) ?? { name: tool };
  chosen = { service, tool, schema: t.inputSchema };
  $("call-target").textContent = `${service} · ${tool}`;
  buildForm(chosen.schema);
  $("json-mode").checked = !chosen.schema;
  toggleJson();
  // Before any vendor of the service ran, the broker knows the tool's name and class, not its schema.
  $("schema-note").textContent = chosen.schema ? "" : r.note ?? "The input schema is not known yet (no vendor of this service has run): write the arguments as JSON.";
  $("run").disabled = false;
  $("run").textContent = `Run ${tool}`;
}

// --- the argument form, driven by the tool's input schema

function buildForm(schema) {
  const box = $("arg-fields");
  box.textContent = "";
  const required = new Set(schema?.required ?? []);
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    const id = "arg-" + name.replace(/[^A-Za-z0-9_-]/g, "_");
    let input;
    if (Array.isArray(p.enum)) {
      input = el("select", { id, "data-arg": name, "data-kind": "enum" }, ...(required.has(name) ? [] : [el("option", { value: "", text: "(none)" })]), ...p.enum.map((v) => el("option", { value: JSON.stringify(v), text: String(v) })));
    } else if (p.type === "boolean") {
      input = el("input", { id, type: "checkbox", "data-arg": name, "data-kind": "boolean" });
    } else if (p.type === "number" || p.type === "integer") {
      input = el("input", { id, type: "number", step: p.type === "integer" ? "1" : "any", "data-arg": name, "data-kind": "number" });
    } else if (p.type === "string") {
      input = el("input", { id, type: "text", "data-arg": name, "data-kind": "string" });
    } else {
      input = el("textarea", { id, rows: "3", "data-arg": name, "data-kind": "json", spellcheck: "false" });
    }
    if (required.has(name)) input.required = true;
    const hintId = id + "-hint";
    if (p.description) input.setAttribute("aria-describedby", hintId);
    box.append(el("div", { class: "field" }, el("label", { for: id, text: name + (required.has(name) ? " (required)" : "") }), input, p.description ? el("p", { id: hintId, class: "hint", text: p.description }) : null));
  }
  if (!box.children.length) box.append(el("p", { class: "hint", text: "This tool takes no arguments." }));
  $("json-args").value = "{}";
}

function formArgs() {
  if (!$("json-mode").checked) return fieldArgs();
  const v = JSON.parse($("json-args").value || "{}");
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("The arguments must be a JSON object.");
  return v;
}

function fieldArgs() {
  const args = {};
  for (const input of $("arg-fields").querySelectorAll("[data-arg]")) {
    const name = input.dataset.arg;
    switch (input.dataset.kind) {
      case "boolean": args[name] = input.checked; break;
      case "number": if (input.value !== "") args[name] = Number(input.value); break;
      case "enum": if (input.value !== "") args[name] = JSON.parse(input.value); break;
      case "json": if (input.value.trim() !== "") args[name] = JSON.parse(input.value); break;
      default: if (input.value !== "" || input.required) args[name] = input.value;
    }
  }
  return args;
}

function toggleJson() {
  const on = $("json-mode").checked;
  if (on) {
    try { $("json-args").value = JSON.stringify(fieldArgs(), null, 2); } catch { /* a field holds invalid JSON: keep the editor's text */ }
  }
  $("json-box").hidden = !on;
  $("arg-fields").hidden = on;
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
    return { state: r.isError ? "error" : "ok", status: r.isError ? "The vendor tool reported an error." : "Done.", how: (HOW[s.ranAs] ?? (() => `Ran as ${s.ranAs}`))(owner) };
  }
  if (s.status === "refused" || s.status === "needs_connect") return { state: "refused", status: `Refused: ${s.code}`, message: s.message };
  return { state: r.isError ? "error" : "ok", status: s.message ?? (r.isError ? "Failed." : "Done.") };
}

/** Runs one broker tool as the acting person and shows it in the run list, live until it answers. */
async function run(tool, args, label) {
  const n = ++runCount;
  const runId = newRunId();
  const who = names(state.actor);
  const head = el("h4", { id: `run-${n}-h`, text: `Run ${n}: ${who} · ${label}` });
  const status = el("p", { class: "status", role: "status", text: "Running…" });
  const item = el("article", { class: "run", "data-state": "running", "data-run": runId, "aria-labelledby": head.id }, head, status);
  $("runs").prepend(el("li", {}, item));
  try {
    const r = await hostCall(tool, args, runId);
    const d = describeOutcome(r);
    item.dataset.state = d.state;
    status.textContent = d.status;
    if (d.how) item.append(el("p", { class: "how", text: d.how }));
    if (d.message) item.append(el("p", { class: "message", text: d.message }));
    if (r.kind === "result" && r.text && r.text !== d.message) item.append(el("pre", { class: "text", text: r.text }));
    if (r.kind === "result" && r.structured) item.append(el("details", {}, el("summary", { text: "Structured result" }), el("pre", { text: JSON.stringify(r.structured, null, 2) })));
  } catch (err) {
    item.dataset.state = "error";
    status.textContent = `Not run: ${err.message}`;
  }
}

/** A progress notification of a run (e.g. waiting for an owner's answer). */
export function onProgress(p) {
  const item = document.querySelector(`[data-run="${CSS.escape(p.runId)}"]`);
  if (!item || item.dataset.state !== "running") return;
  item.querySelector(".status").textContent = p.message ? `Running… ${p.message}` : `Running… (${p.progress}${p.total ? "/" + p.total : ""})`;
}

/** Wires the play panel. */
export function initPlay() {
  $("channel").addEventListener("change", async () => { state.channelId = $("channel").value; state.threadTs = ""; await refreshThreads(); });
  $("thread").addEventListener("change", async () => { state.threadTs = $("thread").value; await refreshNotes(); await refreshServices().catch((e) => toast(e.message)); });
  $("new-thread").addEventListener("click", async () => {
    try {
      const { thread } = await postJson("/console/api/threads", { channelId: state.channelId, userId: state.actor });
      state.threadTs = thread.threadTs;
      await refreshThreads();
      await refreshServices();
      toast(`${names(state.actor)} started a thread in #${names(state.channelId)}.`);
    } catch (err) { toast(err.message); }
  });
  $("refresh-services").addEventListener("click", () => refreshServices().catch((e) => toast(e.message)));
  $("tool-search").addEventListener("submit", (ev) => searchTools(ev).catch((e) => toast(e.message)));
  $("json-mode").addEventListener("change", toggleJson);
  $("call-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!chosen) return;
    let args;
    try { args = formArgs(); } catch (err) { return toast(`Arguments: ${err.message}`); }
    void run("mcp_call", { service: chosen.service, tool: chosen.tool, args, on_behalf_of: state.actor }, `${chosen.service} · ${chosen.tool}`);
  });
}
