// The live-view page: shows the screencast of the confined login browser and relays the user's
// mouse, keyboard and text back over a WebSocket. The session id comes from the page's JSON data
// element (the CSP allows no inline script); the viewer cookie is HttpOnly and travels by itself.
(() => {
  const { sessionId } = JSON.parse(document.getElementById("login-session").textContent);
  const $ = (id) => document.getElementById(id);
  const screen = $("screen"),
    status = $("status"),
    kbd = $("kbd"),
    form = $("paste");
  let frameW = 0,
    frameH = 0,
    ended = false;
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const width = Math.max(320, Math.min(1280, Math.round(window.innerWidth - 16))),
    height = Math.max(480, Math.min(900, Math.round(window.innerHeight - 120)));
  // The viewport rides in the URL, so the login browser starts as the socket opens; the message
  // after it is for a broker that reads only messages.
  const ws = new WebSocket(
    `${proto}//${location.host}/login/ws?s=${encodeURIComponent(sessionId)}&w=${width}&h=${height}`,
  );
  const send = (m) => {
    if (ws.readyState === 1) ws.send(JSON.stringify(m));
  };
  ws.onopen = () => send({ type: "viewport", width, height });
  ws.onclose = () => {
    if (!ended) setStatus("failed", "Connection to slaude-connect lost. Reload to reconnect.");
  };
  function setStatus(state, message) {
    status.dataset.state = state;
    status.textContent = message;
    if (["captured", "expired", "cancelled", "failed", "refused"].includes(state)) {
      ended = true;
      screen.classList.remove("live");
      form.classList.remove("live");
      $("done").hidden = true;
      $("cancel").hidden = true;
      $("device").hidden = true;
    }
  }
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === "frame") {
      frameW = m.width;
      frameH = m.height;
      screen.src = `data:image/jpeg;base64,${m.data}`;
      screen.classList.add("live");
      screen.classList.toggle("popup", !!m.popup);
    } else if (m.type === "status") setStatus(m.state, m.message);
    else if (m.type === "strategy") {
      $("done").hidden = m.strategy !== "cookie";
    } else if (m.type === "device_code") {
      // Text nodes only; the URLs (https, one origin, checked by the broker) make a plain link that opens
      // in a new tab. The text is the address to type elsewhere only if it is on the host the link opens
      // (else the link's own address), and the host shown is read back from the link itself.
      const a = $("device-url");
      a.href = m.verificationUriComplete || m.verificationUri;
      const opens = new URL(a.href);
      a.textContent = new URL(m.verificationUri).host === opens.host ? m.verificationUri : opens.href;
      $("device-host").textContent = opens.host;
      $("device-code").textContent = m.userCode;
      $("device").hidden = false;
    } else if (m.type === "paste_form") {
      $("instructions").textContent = m.instructions;
      const box = $("fields");
      box.textContent = "";
      for (const f of m.fields) {
        const l = document.createElement("label");
        l.textContent = f.label;
        const i = document.createElement("input");
        i.type = f.secret ? "password" : "text";
        i.name = f.name;
        i.required = true;
        l.appendChild(i);
        box.appendChild(l);
      }
      form.classList.add("live");
    }
  };
  function point(e) {
    const r = screen.getBoundingClientRect();
    return {
      x: Math.max(0, ((e.clientX - r.left) * frameW) / r.width),
      y: Math.max(0, ((e.clientY - r.top) * frameH) / r.height),
    };
  }
  const BUTTONS = ["left", "middle", "right"];
  screen.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    kbd.focus({ preventScroll: true });
    const p = point(e);
    send({
      type: "mouse",
      kind: "down",
      x: p.x,
      y: p.y,
      button: BUTTONS[e.button] || "left",
      clickCount: e.detail > 1 ? Math.min(3, e.detail) : 1,
    });
  });
  screen.addEventListener("pointerup", (e) => {
    e.preventDefault();
    const p = point(e);
    send({ type: "mouse", kind: "up", x: p.x, y: p.y, button: BUTTONS[e.button] || "left", clickCount: 1 });
  });
  let lastMove = 0;
  // Pointer moves are thinned to about 25 a second: the server's input queue is bounded.
  screen.addEventListener("pointermove", (e) => {
    const now = Date.now();
    if (now - lastMove < 40) return;
    lastMove = now;
    const p = point(e);
    send({ type: "mouse", kind: "move", x: p.x, y: p.y });
  });
  screen.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      const p = point(e);
      send({ type: "wheel", x: p.x, y: p.y, deltaX: e.deltaX, deltaY: e.deltaY });
    },
    { passive: false },
  );
  screen.addEventListener("contextmenu", (e) => e.preventDefault());
  const SPECIAL = new Set([
    "Enter",
    "Backspace",
    "Tab",
    "Escape",
    "Delete",
    "ArrowLeft",
    "ArrowRight",
    "ArrowUp",
    "ArrowDown",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "Shift",
    "Control",
    "Alt",
    "Meta",
  ]);
  function onKey(kind) {
    return (e) => {
      if (ended) return;
      if (SPECIAL.has(e.key) || e.ctrlKey || e.metaKey) {
        e.preventDefault();
        send({ type: "key", kind, key: e.key });
        return;
      }
      if (kind === "down" && e.key.length === 1) {
        e.preventDefault();
        send({ type: "text", text: e.key });
      }
    };
  }
  kbd.addEventListener("keydown", onKey("down"));
  kbd.addEventListener("keyup", onKey("up"));
  screen.addEventListener("keydown", onKey("down"));
  screen.addEventListener("keyup", onKey("up"));
  // Mobile keyboards deliver text through input events rather than key events.
  kbd.addEventListener("input", () => {
    if (kbd.value) {
      send({ type: "text", text: kbd.value });
      kbd.value = "";
    }
  });
  kbd.addEventListener("paste", (e) => {
    const t = e.clipboardData?.getData("text");
    if (t) {
      e.preventDefault();
      send({ type: "text", text: t.slice(0, 2000) });
    }
  });
  $("cancel").onclick = () => send({ type: "cancel" });
  $("done").onclick = () => send({ type: "done" });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const fields = {};
    for (const i of form.querySelectorAll("input")) fields[i.name] = i.value;
    send({ type: "paste", fields });
    for (const i of form.querySelectorAll("input")) if (i.type === "password") i.value = "";
  });
})();
