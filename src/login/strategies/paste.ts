// The paste strategy: the user pastes an API token (or several fields) into the live-view page's
// private form; an optional startUrl opens the token page in the confined browser for reference.
import type { Service } from "../../config/registry.js";
import type { CredentialInput } from "../../vault/credential.js";
import type { Flow } from "../flow-registry.js";
import type { CaptureStrategy, FlowControl, Viewport } from "./strategy.js";

/** The paste form's values for `service`, or the message telling the user what is wrong. */
export function pastedCredential(
  service: Service,
  fields: Record<string, string>,
): { credential: CredentialInput } | { problem: string } | undefined {
  const capture = service.entry.capture;
  if (capture.strategy !== "paste") return undefined;
  const values: Record<string, string> = {};
  for (const field of capture.fields) {
    const v = (fields[field.name] ?? "").trim();
    if (!v) return { problem: `${field.label} is required.` };
    if (field.pattern && !new RegExp(field.pattern).test(v))
      return { problem: `${field.label} does not look right for ${service.displayName}.` };
    values[field.name] = v;
  }
  return { credential: { kind: "fields", fields: values } };
}

/** Captures pasted fields; the browser, when there is one, only shows where to get them. */
export class PasteStrategy implements CaptureStrategy {
  readonly browserSignsIn = false;

  constructor(private readonly run: FlowControl) {}

  greet(f: Flow): void {
    const capture = f.service.entry.capture;
    if (capture.strategy !== "paste") return;
    f.send?.({
      type: "paste_form",
      instructions: capture.instructions,
      fields: capture.fields.map((x) => ({ name: x.name, label: x.label, secret: x.secret })),
    });
    f.send?.({
      type: "status",
      state: "waiting",
      message: "Paste your token below. It goes straight into encrypted storage.",
    });
  }

  async start(f: Flow, viewport: Viewport): Promise<void> {
    const capture = f.service.entry.capture;
    if (capture.strategy === "paste" && capture.startUrl) await this.run.startBrowser(f, capture.startUrl, viewport);
  }

  async paste(f: Flow, fields: Record<string, string>): Promise<void> {
    const pasted = pastedCredential(f.service, fields);
    if (pasted && "problem" in pasted) f.send?.({ type: "status", state: "waiting", message: pasted.problem });
    else if (pasted) await this.run.complete(f, pasted.credential);
  }

  async done(): Promise<void> {}
}
