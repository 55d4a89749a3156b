// The live-view page: the screencast of the confined login browser, with input relayed back over a
// WebSocket. Self-contained (no external assets) and locked down by a nonce-based CSP.

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** The HTML of the live-view page for one session. */
export function liveViewPage(opts: { sessionId: string; serviceName: string; nonce: string }): string {
  const { nonce } = opts;
  return `<!doctype html>
<html lang="en"><head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, maximum-scale=1">
<meta name="referrer" content="no-referrer">
<title>Connect ${escapeHtml(opts.serviceName)} · slaude-connect</title>
<style nonce="${nonce}">
  :root { color-scheme: light dark; font-family: system-ui, -apple-system, Segoe UI, sans-serif; }
  body { margin: 0; display: flex; flex-direction: column; min-height: 100vh; background: Canvas; color: CanvasText; }
  header { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; padding: .6rem .8rem; border-bottom: 1px solid #8884; }
  header h1 { font-size: 1rem; margin: 0; flex: 1 1 auto; }
  #status { font-size: .9rem; flex: 1 1 100%; order: 3; }
  #status[data-state=captured] { color: #1a7f37; } #status[data-state=failed], #status[data-state=expired], #status[data-state=refused] { color: #cf222e; }
  button { font: inherit; padding: .35rem .8rem; border-radius: .4rem; border: 1px solid #8886; background: ButtonFace; cursor: pointer; }
  main { flex: 1; display: flex; flex-direction: column; align-items: center; padding: .5rem; gap: .8rem; }
  #screen { max-width: 100%; height: auto; touch-action: none; border: 1px solid #8884; outline: none; user-select: none; -webkit-user-select: none; display: none; }
  #screen.live { display: block; }
  #screen.popup { box-shadow: 0 0 0 3px #0969da; }
  form { display: none; flex-direction: column; gap: .5rem; width: min(28rem, 100%); }
  form.live { display: flex; }
  label { display: flex; flex-direction: column; gap: .2rem; font-size: .9rem; }
  input[type=password], input[type=text] { font: inherit; padding: .4rem; }
  #kbd { position: absolute; left: -1000px; width: 1px; height: 1px; opacity: 0; }
  .hint { font-size: .8rem; opacity: .75; max-width: 40rem; text-align: center; }
</style></head>
<body>
<header>
  <h1>Connect ${escapeHtml(opts.serviceName)}</h1>
  <button id="done" type="button" hidden>Done</button>
  <button id="cancel" type="button">Cancel</button>
  <div id="status" role="status" aria-live="polite" data-state="loading">Loading…</div>
</header>
<main>
  <img id="screen" alt="Sign-in page" tabindex="0" draggable="false">
  <textarea id="kbd" autocapitalize="off" autocomplete="off" autocorrect="off" spellcheck="false" aria-hidden="true"></textarea>
  <form id="paste" autocomplete="off"><p id="instructions" class="hint"></p><div id="fields"></div><button type="submit">Save</button></form>
  <p class="hint">This is a private sign-in page for you only. What you enter goes to the service or into encrypted storage, never to the assistant or the conversation.</p>
</main>
<script nonce="${nonce}">
(() => {
  const sessionId = ${JSON.stringify(opts.sessionId)};
  const $ = (id) => document.getElementById(id);
  const screen = $("screen"), status = $("status"), kbd = $("kbd"), form = $("paste");
  let frameW = 0, frameH = 0, ended = false;
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(proto + "//" + location.host + "/login/ws?s=" + encodeURIComponent(sessionId));
  const send = (m) => { if (ws.readyState === 1) ws.send(JSON.stringify(m)); };
  ws.onopen = () => send({ type: "viewport", width: Math.max(320, Math.min(1280, Math.round(window.innerWidth - 16))), height: Math.max(480, Math.min(900, Math.round(window.innerHeight - 120))) });
  ws.onclose = () => { if (!ended) setStatus("failed", "Connection to slaude-connect lost. Reload to reconnect."); };
  function setStatus(state, message) { status.dataset.state = state; status.textContent = message; if (["captured","expired","cancelled","failed","refused"].includes(state)) { ended = true; screen.classList.remove("live"); form.classList.remove("live"); $("done").hidden = true; $("cancel").hidden = true; } }
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === "frame") { frameW = m.width; frameH = m.height; screen.src = "data:image/jpeg;base64," + m.data; screen.classList.add("live"); screen.classList.toggle("popup", !!m.popup); }
    else if (m.type === "status") setStatus(m.state, m.message);
    else if (m.type === "strategy") { $("done").hidden = m.strategy !== "cookie"; }
    else if (m.type === "paste_form") {
      $("instructions").textContent = m.instructions;
      const box = $("fields"); box.textContent = "";
      for (const f of m.fields) { const l = document.createElement("label"); l.textContent = f.label; const i = document.createElement("input"); i.type = f.secret ? "password" : "text"; i.name = f.name; i.required = true; l.appendChild(i); box.appendChild(l); }
      form.classList.add("live");
    }
  };
  function point(e) { const r = screen.getBoundingClientRect(); return { x: Math.max(0, (e.clientX - r.left) * frameW / r.width), y: Math.max(0, (e.clientY - r.top) * frameH / r.height) }; }
  const BUTTONS = ["left", "middle", "right"];
  screen.addEventListener("pointerdown", (e) => { e.preventDefault(); kbd.focus({ preventScroll: true }); const p = point(e); send({ type: "mouse", kind: "down", x: p.x, y: p.y, button: BUTTONS[e.button] || "left", clickCount: e.detail > 1 ? Math.min(3, e.detail) : 1 }); });
  screen.addEventListener("pointerup", (e) => { e.preventDefault(); const p = point(e); send({ type: "mouse", kind: "up", x: p.x, y: p.y, button: BUTTONS[e.button] || "left", clickCount: 1 }); });
  let lastMove = 0;
  screen.addEventListener("pointermove", (e) => { const now = Date.now(); if (now - lastMove < 40) return; lastMove = now; const p = point(e); send({ type: "mouse", kind: "move", x: p.x, y: p.y }); });
  screen.addEventListener("wheel", (e) => { e.preventDefault(); const p = point(e); send({ type: "wheel", x: p.x, y: p.y, deltaX: e.deltaX, deltaY: e.deltaY }); }, { passive: false });
  screen.addEventListener("contextmenu", (e) => e.preventDefault());
  const SPECIAL = new Set(["Enter","Backspace","Tab","Escape","Delete","ArrowLeft","ArrowRight","ArrowUp","ArrowDown","Home","End","PageUp","PageDown","Shift","Control","Alt","Meta"]);
  function onKey(kind) { return (e) => {
    if (ended) return;
    if (SPECIAL.has(e.key) || e.ctrlKey || e.metaKey) { e.preventDefault(); send({ type: "key", kind, key: e.key }); return; }
    if (kind === "down" && e.key.length === 1) { e.preventDefault(); send({ type: "text", text: e.key }); }
  }; }
  kbd.addEventListener("keydown", onKey("down")); kbd.addEventListener("keyup", onKey("up"));
  screen.addEventListener("keydown", onKey("down")); screen.addEventListener("keyup", onKey("up"));
  // Mobile keyboards deliver text through input events rather than key events.
  kbd.addEventListener("input", () => { if (kbd.value) { send({ type: "text", text: kbd.value }); kbd.value = ""; } });
  kbd.addEventListener("paste", (e) => { const t = e.clipboardData && e.clipboardData.getData("text"); if (t) { e.preventDefault(); send({ type: "text", text: t.slice(0, 2000) }); } });
  $("cancel").onclick = () => send({ type: "cancel" });
  $("done").onclick = () => send({ type: "done" });
  form.addEventListener("submit", (e) => { e.preventDefault(); const fields = {}; for (const i of form.querySelectorAll("input")) fields[i.name] = i.value; send({ type: "paste", fields }); for (const i of form.querySelectorAll("input")) if (i.type === "password") i.value = ""; });
})();
</script>
</body></html>`;
}

/** The page shown when a link cannot be opened. */
export function refusalPage(title: string, message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem;"><h1 style="font-size:1.2rem">${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>`;
}
