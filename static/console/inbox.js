// The Inbox: the cards of one person, rendered from the shared card model by cards.js (the page
// adds nothing to what they say). The badge on the tab counts the open cards of the person
// acting, whichever inbox is shown.

import { getJson, postJson } from "./api.js";
import { renderCard } from "./cards.js";
import { $, el, fillSelect, names, reveal, state } from "./ui.js";

const inboxItems = new Map(); // item id → item, of the inbox shown
const actorOpen = new Map(); // item id → open?, of the acting person (the badge)

/** What a settled card that once asked something says above its title. */
const SETTLED_TAG = { approval_settled: "Answered: nothing left to do", consent_used: "Used: nothing left to do" };

function cardItem(item) {
  const answer = el("p", { class: "answer", role: "status" });
  const card = renderCard(item.card, { names, onAction: (a, button) => act(item, a, button, answer) });
  card.dataset.state = item.state;
  card.dataset.item = item.id;
  if (item.state === "settled") {
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    const tag = SETTLED_TAG[item.card.kind];
    if (tag) card.prepend(el("p", { class: "settled-tag", text: tag }));
  }
  card.append(answer);
  return el("li", { "data-item": item.id }, card);
}

async function act(item, action, button, answer) {
  if (action.id === "continue") {
    // Opened inside the click (a popup needs the user's gesture), pointed at the link once minted.
    const w = window.open("", "_blank");
    if (w) w.opener = null;
    answer.textContent = "Opening the sign-in page…";
    try {
      const { url } = await postJson("/console/api/continue", { itemId: item.id, asUserId: state.actor });
      if (w) w.location.href = url;
      answer.textContent = "The sign-in page opened in a new tab.";
      answer.append(" ", el("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: "Open it again" }));
    } catch (err) {
      w?.close();
      answer.textContent = err.message;
    }
    reveal(answer);
    return;
  }
  button.disabled = true;
  answer.textContent = `Sending ${action.label}…`;
  try {
    const r = await postJson("/console/api/decide", {
      approvalId: item.approvalId,
      decision: action.id,
      asUserId: state.actor,
    });
    answer.textContent = r.result === "applied" ? `${names(state.actor)} answered: ${action.label}.` : r.message;
  } catch (err) {
    answer.textContent = err.message;
  } finally {
    button.disabled = false;
    reveal(answer);
  }
}

function drawInbox() {
  const list = $("inbox");
  list.textContent = "";
  const items = [...inboxItems.values()].sort((a, b) => b.at - a.at);
  for (const item of items) list.append(cardItem(item));
  if (!items.length)
    list.append(
      el("li", {
        class: "hint",
        text: `${names(state.inboxUser)} has no cards. Cards arrive here when someone asks to use ${names(state.inboxUser)}'s account or ${names(state.inboxUser)} connects a service.`,
      }),
    );
}

/** The badge: open cards of the person acting (whoever's inbox is shown). */
function drawBadge() {
  const open = [...actorOpen.values()].filter(Boolean).length;
  $("inbox-count").textContent = open ? String(open) : "";
  $("inbox-count").setAttribute("aria-label", open ? `${open} open for ${names(state.actor)}` : "");
}

/** Reloads the inbox shown and the acting person's badge. */
export async function refreshInbox() {
  state.inboxUser = fillSelect(
    $("inbox-user"),
    state.users.map((u) => [u.id, u.name]),
    state.inboxUser || state.actor,
  );
  const asked = state.inboxUser;
  const actor = state.actor;
  const [shown, mine] = await Promise.all([
    getJson("/console/api/inbox", { user: asked }),
    asked === actor ? undefined : getJson("/console/api/inbox", { user: actor }),
  ]);
  if (actor === state.actor) {
    actorOpen.clear();
    for (const i of (mine ?? shown).items) actorOpen.set(i.id, i.state === "open");
    drawBadge();
  }
  if (asked !== state.inboxUser) return; // another inbox was chosen meanwhile
  inboxItems.clear();
  for (const i of shown.items) inboxItems.set(i.id, i);
  drawInbox();
}

/** A card pushed by the server: the badge of the person acting, and the inbox shown. */
export function onInbox(e) {
  if (e.userId === state.actor) {
    actorOpen.set(e.item.id, e.item.state === "open");
    drawBadge();
  }
  if (e.userId !== state.inboxUser) return;
  const shown = $("inbox").querySelector(`li[data-item="${CSS.escape(e.item.id)}"]`);
  inboxItems.set(e.item.id, e.item);
  if (!shown) return drawInbox();
  // A card shown already is replaced where it is, keeping what its answer line says (the outcome
  // of the click that settled it, or the sign-in link just opened).
  const answer = shown.querySelector(".answer");
  const fresh = cardItem(e.item);
  if (answer?.textContent) fresh.querySelector(".answer").replaceWith(answer);
  shown.replaceWith(fresh);
}
