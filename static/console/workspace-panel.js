// The Workspace panel: the people and each channel's members (a change counts from the next call).

import { postJson } from "./api.js";
import { $, el, state, toast } from "./ui.js";

/** Redraws people and channel membership. */
export function drawWorkspace() {
  const users = $("users");
  users.textContent = "";
  for (const u of state.users) {
    const admin = u.admin ? el("span", { class: "badge", text: "admin" }) : null;
    users.append(el("li", {}, el("strong", { text: u.name }), ` (${u.id})`, admin));
  }
  const box = $("channels");
  box.textContent = "";
  for (const c of state.channels) {
    const fs = el("fieldset", {}, el("legend", { text: `#${c.name} members` }));
    for (const u of state.users) {
      const cb = el("input", { type: "checkbox", id: `m-${c.id}-${u.id}` });
      cb.checked = c.members.includes(u.id);
      cb.addEventListener("change", async () => {
        try {
          await postJson("/console/api/membership", { channelId: c.id, userId: u.id, member: cb.checked });
          toast(`${u.name} ${cb.checked ? "joined" : "left"} #${c.name}; the next call sees it.`);
        } catch (err) {
          cb.checked = !cb.checked;
          toast(err.message);
        }
      });
      fs.append(el("label", { class: "check", for: cb.id }, cb, `${u.name} is a member of #${c.name}`));
    }
    box.append(fs);
  }
}
