// The console API client: same-origin fetches with the session cookie, the CSRF header on every
// state-changing request, and the live event stream (Server-Sent Events).

let csrf = "";

/** Reads the session (its CSRF token and the team). */
export async function openSession() {
  const s = await getJson("/console/api/session");
  csrf = s.csrf;
  return s;
}

/** GET a console endpoint; throws an Error carrying the server's message on failure. */
export async function getJson(path, params = {}) {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== ""));
  const res = await fetch(path + (q.size ? `?${q}` : ""), {
    credentials: "same-origin",
    headers: { accept: "application/json" },
  });
  return answer(res);
}

/** POST JSON to a console endpoint with the CSRF header. */
export async function postJson(path, body) {
  const res = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", "x-console-csrf": csrf },
    body: JSON.stringify(body),
  });
  return answer(res);
}

async function answer(res) {
  const body = await res.json().catch(() => ({}));
  if (!res.ok && !(res.status === 429 && body.kind)) {
    const err = new Error(body.message || `HTTP ${res.status}`);
    err.code = body.error;
    throw err;
  }
  return body;
}

/** Listens to the console's events: `handlers[type](data)`; `onState("live" | "lost")`. */
export function listen(handlers, onState) {
  const es = new EventSource("/console/api/events");
  es.onopen = () => onState("live");
  es.onerror = () => onState("lost");
  for (const [type, fn] of Object.entries(handlers)) es.addEventListener(type, (e) => fn(JSON.parse(e.data)));
  return es;
}
