// The Activity tab: calls per minute by outcome and latency p50/p95 over the last hour, drawn as
// inline SVG from GET /console/api/activity (the figures `slaude-connect stats --team` prints).
// A tab module (see tabs.js): it fills its panel while the panel is shown, reloads when a call's audit
// row arrives on the console's event stream, and moves the window on at each new minute.

import { addTab } from "./tabs.js";

const OUTCOMES = [
  ["own", "Own connection", "#007a5a"],
  ["borrowed", "Borrowed", "#1264a3"],
  ["refused", "Refused", "#8a5a00"],
  ["failed", "Failed", "#c0392b"],
];
const SVG = "http://www.w3.org/2000/svg";
const W = 600;
const H = 180;
const PAD = { left: 48, right: 8, top: 10, bottom: 24 };

const panel = addTab({ id: "activity", label: "Activity" });

/** An SVG element with attributes; `text` sets its text content (never markup). */
function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** An HTML element; `text` sets its text content. */
function html(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

const hhmm = (t) => new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** "own 1, borrowed 2, refused 0, failed 1", as `slaude-connect stats` words it. */
function countsText(counts) {
  return OUTCOMES.map(([k]) => `${k} ${counts[k]}`).join(", ");
}

/** The latency sentence, worded as `slaude-connect stats` words it. */
function latencyLine(l) {
  return l.timed ? `p50 ${l.p50Ms} ms, p95 ${l.p95Ms} ms (${plural(l.timed, "call")})` : "no call was let through";
}

/** A chart frame: the <svg> with its title, axes and the x labels of the window. */
function frame(id, title, s, yMax, yUnit) {
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    role: "img",
    "aria-labelledby": `${id}-title`,
    id,
  });
  root.append(svg("title", { id: `${id}-title` }, title));
  const x0 = PAD.left;
  const y0 = H - PAD.bottom;
  root.append(svg("line", { x1: x0, y1: y0, x2: W - PAD.right, y2: y0, stroke: "#b8b8b8" }));
  root.append(svg("line", { x1: x0, y1: PAD.top, x2: x0, y2: y0, stroke: "#b8b8b8" }));
  root.append(
    svg(
      "text",
      { x: x0 - 4, y: PAD.top + 8, "text-anchor": "end", "font-size": 11, fill: "#5e5d60" },
      `${yMax}${yUnit}`,
    ),
  );
  root.append(svg("text", { x: x0 - 4, y: y0, "text-anchor": "end", "font-size": 11, fill: "#5e5d60" }, "0"));
  const n = s.minutes.length;
  for (const i of [0, Math.floor(n / 2), n - 1]) {
    const m = s.minutes[i];
    if (!m) continue;
    const anchor = i === 0 ? "start" : i === n - 1 ? "end" : "middle";
    root.append(
      svg(
        "text",
        { x: xOf(i + (i === n - 1 ? 1 : 0), n), y: H - 6, "text-anchor": anchor, "font-size": 11, fill: "#5e5d60" },
        hhmm(m.start),
      ),
    );
  }
  return root;
}

function xOf(i, n) {
  return PAD.left + ((W - PAD.left - PAD.right) * i) / n;
}

/** A round upper bound for the y axis. */
function ceiling(v) {
  if (v <= 5) return Math.max(1, v);
  const step = 10 ** Math.floor(Math.log10(v));
  return Math.ceil(v / step) * step;
}

/** Stacked bars: one per minute, one colour per outcome. */
function callsChart(s) {
  const n = s.minutes.length;
  const totals = s.minutes.map((m) => OUTCOMES.reduce((a, [k]) => a + m.counts[k], 0));
  const yMax = ceiling(Math.max(0, ...totals));
  const root = frame(
    "activity-calls",
    `Calls per minute by outcome, ${hhmm(s.since)} to ${hhmm(s.until)}`,
    s,
    yMax,
    "",
  );
  const plot = H - PAD.top - PAD.bottom;
  const bw = Math.max(1, (W - PAD.left - PAD.right) / n - 1);
  s.minutes.forEach((m, i) => {
    let y = H - PAD.bottom;
    const g = svg("g", { "data-minute": m.start });
    g.append(svg("title", {}, `${hhmm(m.start)}: ${OUTCOMES.map(([k]) => `${k} ${m.counts[k]}`).join(", ")}`));
    for (const [k, , colour] of OUTCOMES) {
      const h = (m.counts[k] / yMax) * plot;
      if (h <= 0) continue;
      y -= h;
      g.append(svg("rect", { x: xOf(i, n) + 0.5, y, width: bw, height: h, fill: colour, "data-outcome": k }));
    }
    root.append(g);
  });
  return root;
}

/** p50 and p95 per minute as points joined across consecutive minutes. */
function latencyChart(s) {
  const n = s.minutes.length;
  const yMax = ceiling(Math.max(0, ...s.minutes.map((m) => m.p95Ms ?? 0)));
  const root = frame("activity-latency", "Latency per minute, p50 and p95, in milliseconds", s, yMax, "");
  const plot = H - PAD.top - PAD.bottom;
  const cx = (i) => xOf(i + 0.5, n);
  const cy = (v) => H - PAD.bottom - (v / yMax) * plot;
  for (const [key, colour, dash] of [
    ["p95Ms", "#c0392b", "4 3"],
    ["p50Ms", "#1264a3", ""],
  ]) {
    let run = [];
    const flush = () => {
      if (run.length > 1)
        root.append(
          svg("polyline", {
            points: run.join(" "),
            fill: "none",
            stroke: colour,
            "stroke-width": 1.5,
            "stroke-dasharray": dash,
          }),
        );
      run = [];
    };
    for (const [i, m] of s.minutes.entries()) {
      if (m[key] === null) {
        flush();
        continue;
      }
      run.push(`${cx(i)},${cy(m[key])}`);
      const dot = svg("circle", { cx: cx(i), cy: cy(m[key]), r: 2.5, fill: colour, "data-series": key });
      dot.append(svg("title", {}, `${hhmm(m.start)}: ${key === "p50Ms" ? "p50" : "p95"} ${m[key]} ms`));
      root.append(dot);
    }
    flush();
  }
  return root;
}

/** One line of colour swatches and labels. */
function legend(items) {
  const p = html("p", { class: "legend" });
  for (const [label, colour, value] of items) {
    const sw = svg("svg", { width: 12, height: 12, "aria-hidden": "true" });
    sw.append(svg("rect", { width: 12, height: 12, fill: colour }));
    p.append(sw, " ", html("span", {}, value === undefined ? label : `${label}: ${value}`), "\u2003");
  }
  return p;
}

function minutesTable(s) {
  const busy = s.minutes.filter((m) => OUTCOMES.some(([k]) => m.counts[k] > 0));
  const details = html("details");
  details.append(html("summary", {}, `Minutes with calls (${busy.length})`));
  const wrap = html("div", { class: "table-wrap" });
  const table = html("table", { id: "activity-table" });
  const head = html("tr");
  for (const h of ["Minute", "Own", "Borrowed", "Refused", "Failed", "p50 ms", "p95 ms"])
    head.append(html("th", { scope: "col" }, h));
  table.append(html("thead"), html("tbody"));
  table.tHead.append(head);
  for (const m of busy) {
    const tr = html("tr");
    for (const v of [hhmm(m.start), ...OUTCOMES.map(([k]) => m.counts[k]), m.p50Ms ?? "-", m.p95Ms ?? "-"])
      tr.append(html("td", {}, String(v)));
    table.tBodies[0].append(tr);
  }
  wrap.append(table);
  details.append(wrap);
  return details;
}

function draw(s) {
  const body = html("div", { id: "activity-body" });
  const minutes = s.minutes.length;
  const head = html(
    "p",
    { id: "activity-summary" },
    `${plural(s.calls, "call")} in the last ${plural(minutes, "minute")}: ${countsText(s.totals)}`,
  );
  const lat = html("p", { id: "activity-latency-line" }, `Latency: ${latencyLine(s.latency)}`);
  body.append(head);
  if (s.partialBefore !== null)
    body.append(html("p", { class: "hint" }, `Busy hour: the figures before ${hhmm(s.partialBefore)} are partial.`));
  body.append(
    html("h3", {}, "Calls per minute"),
    legend(OUTCOMES.map(([k, label, colour]) => [label, colour, s.totals[k]])),
    callsChart(s),
  );
  body.append(
    html("h3", {}, "Latency"),
    lat,
    legend([
      ["p50", "#1264a3"],
      ["p95", "#c0392b"],
    ]),
    latencyChart(s),
    minutesTable(s),
  );
  body.append(
    html(
      "p",
      { class: "hint" },
      "Refused calls never reached a vendor, so their time is not in the latency. " +
        "A borrowed call's time includes the wait for the owner's answer.",
    ),
  );
  panel.querySelector("#activity-body")?.replaceWith(body);
  panel.dataset.ready = "true";
}

let es;
let minuteTimer;
let pending;

async function load() {
  clearTimeout(minuteTimer);
  try {
    const res = await fetch("/console/api/activity", {
      credentials: "same-origin",
      headers: { accept: "application/json" },
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(body.message || `HTTP ${res.status}`);
    draw(body);
    // The window moves on when the next minute starts.
    minuteTimer = setTimeout(() => !panel.hidden && load(), 60_000 - (body.now % 60_000) + 50);
  } catch (err) {
    panel
      .querySelector("#activity-body")
      ?.replaceChildren(html("p", { role: "alert" }, `The activity could not be read: ${err.message}`));
  }
}

/** At most one reload a second however many calls arrive. */
function soon() {
  if (pending) return;
  pending = setTimeout(() => {
    pending = undefined;
    void load();
  }, 1000);
}

function shown() {
  void load();
  es ??= new EventSource("/console/api/events");
  es.addEventListener("audit", (e) => {
    const rows = JSON.parse(e.data).rows ?? [];
    if (rows.some((r) => r.event === "call" || r.event === "call_denied")) soon();
  });
}

function hidden() {
  es?.close();
  es = undefined;
  clearTimeout(minuteTimer);
}

if (panel) {
  document.head.append(html("link", { rel: "stylesheet", href: "/console/activity.css" }));
  panel.append(html("h2", { class: "vh" }, "Activity"), html("div", { id: "activity-body" }));
  new MutationObserver(() => (panel.hidden ? hidden() : shown())).observe(panel, {
    attributes: true,
    attributeFilter: ["hidden"],
  });
  if (!panel.hidden) shown();
}
