// The console's tabs: the built-in ones are in index.html; a module adds one with addTab(). A tab
// is a button in the tab list and its panel; selecting it shows the panel and calls its onShow.

import { $, el } from "./ui.js";

const onShow = new Map(); // tab id → callback when shown

function tabs() {
  return [...document.querySelectorAll('#tablist [role="tab"]')];
}

/** Shows the panel of `tab` (and hides the others); `focus` moves the focus to the tab. */
export function select(tab, focus = false) {
  for (const t of tabs()) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
  if (focus) tab.focus();
  onShow.get(tab.id)?.();
}

/** Selects the tab named `id` (e.g. "tab-inbox"). */
export function selectTab(id) {
  const t = $(id);
  if (t) select(t);
}

function wire(t) {
  t.addEventListener("click", () => select(t));
  t.addEventListener("keydown", (e) => {
    const all = tabs();
    const i = all.indexOf(t);
    const keys = {
      ArrowRight: all[(i + 1) % all.length],
      ArrowLeft: all[(i - 1 + all.length) % all.length],
      Home: all[0],
      End: all[all.length - 1],
    };
    const next = keys[e.key];
    if (next) {
      e.preventDefault();
      select(next, true);
    }
  });
}

/** Wires the tabs of the page; `shown` maps tab ids to what runs when each is shown. */
export function initTabs(shown = {}) {
  for (const [id, fn] of Object.entries(shown)) onShow.set(id, fn);
  for (const t of tabs()) wire(t);
}

/**
 * Adds a tab after the others: `{ id, label, onShow }`. Returns its panel (a <section>) for the
 * caller to fill. The tab is `tab-<id>`, the panel `panel-<id>`.
 */
export function addTab({ id, label, onShow: shown }) {
  const tab = el("button", {
    type: "button",
    role: "tab",
    id: `tab-${id}`,
    "aria-controls": `panel-${id}`,
    "aria-selected": "false",
    tabindex: "-1",
    text: label,
  });
  const panel = el(
    "section",
    { role: "tabpanel", id: `panel-${id}`, "aria-labelledby": tab.id, tabindex: "0", hidden: true },
    el("h2", { class: "vh", text: label }),
  );
  $("tablist").append(tab);
  $("main").append(panel);
  if (shown) onShow.set(tab.id, shown);
  wire(tab);
  return panel;
}
