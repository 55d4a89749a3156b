// Shared page state and small DOM helpers of the console.

/** The page's state: the workspace as last read, who the page acts as, the chosen thread. */
export const state = {
  teamId: "",
  users: [],
  channels: [],
  actor: "",
  channelId: "",
  threadTs: "",
  inboxUser: "",
  /** How long a call waits for an owner's answer (from the session). */
  approvalTimeoutMs: 0,
};

/** document.getElementById. */
export const $ = (id) => document.getElementById(id);

/** Creates an element: `props.text` sets its text (never markup), other props are attributes. */
export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== undefined && c !== null) e.append(c);
  return e;
}

/** A user's or channel's name for an id (the id itself when unknown). */
export function names(id) {
  const u = state.users.find((x) => x.id === id);
  if (u) return u.name;
  const c = state.channels.find((x) => x.id === id);
  return c ? c.name : id;
}

/** Shows a short message to the reader (announced by screen readers). */
export function toast(message) {
  const t = $("toast");
  t.textContent = message;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.textContent = ""), 6000);
}

/** Fills a <select> with [value, label] pairs, keeping `selected` when present. */
export function fillSelect(select, options, selected) {
  select.textContent = "";
  for (const [value, label] of options) select.append(el("option", { value, text: label }));
  if (options.some(([v]) => v === selected)) select.value = selected;
  return select.value;
}

/** A date as the reader's local time. */
export function when(at) {
  return new Date(at).toLocaleString();
}

/** Brings a piece of feedback into view (without moving the page when it is already visible). */
export function reveal(node) {
  node.scrollIntoView?.({ block: "nearest", inline: "nearest" });
}

/** `fn` run once `ms` after the last of a burst of calls (a burst of events reloads a panel once). */
export function debounce(fn, ms = 120) {
  let timer;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

/** A fresh id for one broker call of the page (progress events name it). */
export function newRunId() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return `run_${btoa(String.fromCharCode(...b))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "")}`;
}
