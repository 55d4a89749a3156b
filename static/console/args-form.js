// The call form's arguments, with one source of truth at a time: the form built from the tool's
// input schema, or (when chosen) the JSON editor, which then replaces the form. An invalid value
// is said next to its field.

import { $, el } from "./ui.js";

let schemaKnown = false;

/** Builds the form of `schema` (no form, the JSON editor only, when it is unknown). */
export function buildForm(schema) {
  schemaKnown = Boolean(schema);
  const box = $("arg-fields");
  box.textContent = "";
  const required = new Set(schema?.required ?? []);
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    const id = `arg-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    let input;
    if (Array.isArray(p.enum)) {
      input = el(
        "select",
        { id, "data-arg": name, "data-kind": "enum" },
        ...(required.has(name) ? [] : [el("option", { value: "", text: "(none)" })]),
        ...p.enum.map((v) => el("option", { value: JSON.stringify(v), text: String(v) })),
      );
    } else if (p.type === "boolean") {
      input = el("input", { id, type: "checkbox", "data-arg": name, "data-kind": "boolean" });
    } else if (p.type === "number" || p.type === "integer") {
      input = el("input", {
        id,
        type: "number",
        step: p.type === "integer" ? "1" : "any",
        "data-arg": name,
        "data-kind": "number",
      });
    } else if (p.type === "string") {
      input = el("input", { id, type: "text", "data-arg": name, "data-kind": "string" });
    } else {
      input = el("textarea", { id, rows: "3", "data-arg": name, "data-kind": "json", spellcheck: "false" });
    }
    if (required.has(name)) input.required = true;
    const hintId = `${id}-hint`;
    const errId = `${id}-error`;
    input.setAttribute("aria-describedby", `${p.description ? `${hintId} ` : ""}${errId}`);
    box.append(
      el(
        "div",
        { class: "field" },
        el("label", { for: id, text: name + (required.has(name) ? " (required)" : "") }),
        input,
        p.description ? el("p", { id: hintId, class: "hint", text: p.description }) : null,
        el("p", { id: errId, class: "field-error" }),
      ),
    );
  }
  $("no-args").hidden = box.children.length > 0 || !schema;
  $("json-args").value = "{}";
  showJsonError("");
}

/** The form's arguments; throws naming the field whose JSON is invalid (shown next to it). */
export function fieldArgs() {
  const args = {};
  for (const input of $("arg-fields").querySelectorAll("[data-arg]")) {
    const name = input.dataset.arg;
    const err = $(`${input.id}-error`);
    err.textContent = "";
    input.removeAttribute("aria-invalid");
    switch (input.dataset.kind) {
      case "boolean":
        args[name] = input.checked;
        break;
      case "number":
        if (input.value !== "") args[name] = Number(input.value);
        break;
      case "enum":
        if (input.value !== "") args[name] = JSON.parse(input.value);
        break;
      case "json":
        if (input.value.trim() === "") break;
        try {
          args[name] = JSON.parse(input.value);
        } catch (e) {
          err.textContent = `Not valid JSON: ${e.message}`;
          input.setAttribute("aria-invalid", "true");
          throw Object.assign(new Error(`${name}: not valid JSON`), { field: input });
        }
        break;
      default:
        if (input.value !== "" || input.required) args[name] = input.value;
    }
  }
  return args;
}

/** Writes an arguments object into the form (switching back from JSON). */
function fillFields(args) {
  for (const input of $("arg-fields").querySelectorAll("[data-arg]")) {
    const v = args[input.dataset.arg];
    switch (input.dataset.kind) {
      case "boolean":
        input.checked = v === true;
        break;
      case "enum":
        input.value = v === undefined ? "" : JSON.stringify(v);
        break;
      case "json":
        input.value = v === undefined ? "" : JSON.stringify(v, null, 2);
        break;
      default:
        input.value = v === undefined || v === null ? "" : String(v);
    }
  }
}

function showJsonError(message) {
  $("json-error").textContent = message;
  if (message) $("json-args").setAttribute("aria-invalid", "true");
  else $("json-args").removeAttribute("aria-invalid");
}

/** The JSON editor's object; throws (and says so next to the editor) when it is not one. */
export function jsonArgs() {
  let v;
  try {
    v = JSON.parse($("json-args").value || "{}");
  } catch (e) {
    showJsonError(`Not valid JSON: ${e.message}`);
    throw Object.assign(new Error("The arguments are not valid JSON."), { field: $("json-args") });
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) {
    showJsonError('The arguments must be a JSON object, e.g. {"title": "Buy milk"}.');
    throw Object.assign(new Error("The arguments must be a JSON object."), { field: $("json-args") });
  }
  showJsonError("");
  return v;
}

/** Switches the source of truth: the JSON editor replaces the form (its fields are then off). */
export function setJsonMode(on) {
  $("json-box").hidden = !on;
  // A disabled fieldset takes its fields out of the form's validation: only the editor counts.
  $("arg-fields").disabled = on;
  $("arg-fields").hidden = on;
  $("no-args").hidden = on || $("arg-fields").children.length > 0 || !schemaKnown;
}

export function toggleJson() {
  const on = $("json-mode").checked;
  try {
    if (on) $("json-args").value = JSON.stringify(fieldArgs(), null, 2);
    else fillFields(jsonArgs());
  } catch (err) {
    // The text that does not parse stays where it is, its error beside it.
    $("json-mode").checked = !on;
    err.field?.focus();
    return;
  }
  setJsonMode(on);
}
