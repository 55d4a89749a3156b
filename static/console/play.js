// "Play a thread": the reader picks a channel and a thread and acts as a person there. Every
// action is a real tool call of the broker made by the console's server-side agent host (one turn
// reported on /v1/turns, one MCP session on /mcp); this page only shows what the broker answered.
// The Services panel shows what the broker's policy decides for the next call (GET standing).

import { getJson, postJson } from "./api.js";
import { chooseTool, refreshHistory, run } from "./call.js";
import { $, el, fillSelect, names, newRunId, reveal, state, toast, when } from "./ui.js";

/** One broker tool call as the acting person in the chosen thread. */
export async function hostCall(tool, args, runId = newRunId()) {
  if (!state.threadTs) throw new Error("Start or choose a thread first.");
  return postJson("/console/api/host", {
    channelId: state.channelId,
    threadTs: state.threadTs,
    userId: state.actor,
    tool,
    arguments: args,
    runId,
  });
}

/** The structured answer of a host call, or an Error with the refusal's message. */
function structured(r) {
  if (r.kind === "host_error") throw new Error(r.message);
  return r.structured ?? {};
}

// --- channels, threads and notes

/** Refills the channel and thread pickers from the workspace. */
export async function refreshThreads() {
  state.channelId = fillSelect(
    $("channel"),
    state.channels.map((c) => [c.id, `#${c.name}`]),
    state.channelId,
  );
  if (!state.channelId) return;
  const { threads } = await getJson("/console/api/threads", { channel: state.channelId });
  const opts = threads.map((t) => [t.thread.threadTs, `${names(t.startedBy)}'s thread, ${when(t.at)}`]);
  state.threadTs = fillSelect($("thread"), opts.length ? opts : [["", "No thread yet"]], state.threadTs);
  await refreshNotes();
}

async function refreshNotes() {
  const list = $("notes");
  list.textContent = "";
  const channel = names(state.channelId);
  $("thread-info").textContent =
    `${state.threadTs ? `Thread in #${channel}` : "No thread yet: start one"}; calls run as ${names(state.actor)}.`;
  if (!state.threadTs) return void list.append(el("li", { class: "hint", text: "Nothing posted yet." }));
  const asked = state.threadTs;
  const { notes } = await getJson("/console/api/notes", { channel: state.channelId, ts: asked });
  if (asked !== state.threadTs) return; // another thread was chosen meanwhile
  list.textContent = "";
  for (const n of notes) addNote(n);
  if (!notes.length) list.append(el("li", { class: "hint", text: "Nothing posted in this thread yet." }));
}

function addNote(n) {
  $("notes").querySelector(".hint")?.remove();
  $("notes").append(
    el(
      "li",
      {},
      el("time", { datetime: new Date(n.at).toISOString(), text: new Date(n.at).toLocaleTimeString() }),
      " ",
      n.text,
    ),
  );
}

/** A thread note pushed by the server: shown when it belongs to the open thread. */
export function onThreadNote(e) {
  if (e.thread.channelId === state.channelId && e.thread.threadTs === state.threadTs) addNote(e);
}

// --- services: the broker's decision for the next call

/** What the next call of a service would get, in words; `owner` names the lender. */
function standingText(s) {
  const st = s.standing;
  const until = s.connection ? `, expires ${when(s.connection.expiresAt)}` : "";
  switch (st.kind) {
    case "own":
      return `Your connection${s.connection?.scope === "user" ? " (everywhere)" : ""}: calls run on it${until}.`;
    case "grant":
      return `${names(st.owner)}'s connection: ${names(st.owner)} allowed it for this thread, reads run on it${until}.`;
    case "needs_approval":
      return `${names(st.owner)}'s connection: each call asks ${names(st.owner)} first.`;
    case "shared":
      return "The service's shared identity: calls run on it.";
    case "needs_connect":
      return "Not connected here: the next call answers needs connect.";
    case "not_member":
      return `${names(state.actor)} is not a member of #${names(state.channelId)}: calls are refused.`;
    default:
      return `Calls are refused (${st.code}).`;
  }
}

const STANDING_LABEL = {
  own: "yours",
  grant: "borrowed",
  needs_approval: "asks owner",
  shared: "shared",
  needs_connect: "needs connect",
  not_member: "not a member",
};

function serviceItem(s) {
  const li = el("li", { "data-service": s.name, "data-standing": s.standing.kind });
  const text = el(
    "span",
    { class: "grow" },
    el("strong", { text: s.displayName }),
    " ",
    el("span", { class: `badge standing-${s.standing.kind}`, text: STANDING_LABEL[s.standing.kind] ?? "refused" }),
    el("br"),
    standingText(s),
  );
  li.append(text);
  // Connect is offered when the person has no connection of their own here.
  if (["needs_connect", "grant", "needs_approval", "shared"].includes(s.standing.kind)) {
    const label =
      s.standing.kind === "needs_connect" ? `Connect ${s.displayName}` : `Connect your own ${s.displayName}`;
    const b = el("button", { type: "button", text: label });
    const slot = el("div", { class: "inline-run" });
    b.addEventListener("click", async () => {
      b.disabled = true;
      slot.textContent = "";
      const { item, done } = run("connect", { service: s.name }, `connect ${s.name}`, { into: slot });
      reveal(item);
      await done;
      b.disabled = false;
    });
    li.append(b, slot);
  }
  return li;
}

let standingAsked = "";

/** Reloads what the acting person's next call would get, per service, in the chosen thread. */
export async function refreshServices() {
  const box = $("services");
  if (!state.threadTs) {
    box.textContent = "";
    return void box.append(
      el("li", { class: "hint", text: "Start or choose a thread: what a call gets depends on the thread." }),
    );
  }
  standingAsked = `${state.actor} ${state.channelId} ${state.threadTs}`;
  const asked = standingAsked;
  const { services } = await getJson("/console/api/standing", {
    user: state.actor,
    channel: state.channelId,
    ts: state.threadTs,
  });
  if (asked !== standingAsked) return; // someone else acts now, or another thread
  // An inline connect run in progress stays where it is.
  const running = new Map(
    [...box.querySelectorAll("li[data-service]")]
      .filter((li) => li.querySelector('[data-state="running"]'))
      .map((li) => [li.dataset.service, li]),
  );
  box.textContent = "";
  for (const s of services) box.append(running.get(s.name) ?? serviceItem(s));
  if (!services.length) box.append(el("li", { class: "hint", text: "No services in the registry." }));
  const before = $("service").value;
  fillSelect(
    $("service"),
    services.map((s) => [s.name, s.displayName]),
    before,
  );
  if (!before && services.length) await searchTools().catch((e) => toast(e.message));
}

// --- tools

async function searchTools(ev) {
  ev?.preventDefault();
  const service = $("service").value;
  const list = $("tools");
  if (!service) {
    list.textContent = "";
    return void list.append(el("li", { class: "hint", text: "Start or choose a thread to list the tools." }));
  }
  const q = $("tool-query").value.trim();
  const r = structured(await hostCall("mcp_describe", q ? { service, query: q } : { service }));
  list.textContent = "";
  if (r.status !== "ok") return void list.append(el("li", { class: "hint", text: r.message ?? "The broker refused." }));
  for (const t of r.tools ?? []) {
    const cls = [t.class?.access, t.class?.write ? "write" : "read"].filter(Boolean).join(", ");
    const pick = el("button", { type: "button", text: `Use ${t.name}` });
    pick.addEventListener("click", () => chooseTool(service, t.name).catch((e) => toast(e.message)));
    list.append(
      el(
        "li",
        {},
        el(
          "span",
          { class: "grow" },
          el("code", { text: t.name }),
          " ",
          el("span", { class: "badge", text: cls }),
          el("br"),
          t.description ?? "",
        ),
        pick,
      ),
    );
  }
  if (!(r.tools ?? []).length)
    list.append(
      el("li", { class: "hint", text: q ? `No ${service} tool matches "${q}".` : `${service} lists no tools.` }),
    );
}

/** The tool's description from the broker (for the call form). */
export async function describeTool(service, tool) {
  const r = structured(await hostCall("mcp_describe", { service, tool }));
  if (r.status !== "ok") throw new Error(r.message ?? "The broker refused.");
  return { tool: (r.tools ?? []).find((x) => x.name === tool) ?? { name: tool }, note: r.note };
}

async function selectThread() {
  await refreshNotes();
  await Promise.all([refreshServices(), refreshHistory()]);
}

/** Wires the play panel. */
export function initPlay() {
  $("channel").addEventListener("change", async () => {
    state.channelId = $("channel").value;
    state.threadTs = "";
    await refreshThreads();
    await selectThread().catch((e) => toast(e.message));
  });
  $("thread").addEventListener("change", () => {
    state.threadTs = $("thread").value;
    selectThread().catch((e) => toast(e.message));
  });
  $("new-thread").addEventListener("click", async () => {
    try {
      const { thread } = await postJson("/console/api/threads", { channelId: state.channelId, userId: state.actor });
      state.threadTs = thread.threadTs;
      await refreshThreads();
      await selectThread();
      toast(`${names(state.actor)} started a thread in #${names(state.channelId)}.`);
    } catch (err) {
      toast(err.message);
    }
  });
  $("tool-search").addEventListener("submit", (ev) => searchTools(ev).catch((e) => toast(e.message)));
  $("service").addEventListener("change", () => searchTools().catch((e) => toast(e.message)));
}
