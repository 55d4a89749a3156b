// The registry for tests against the hostile fixture vendor: the normal fixture `vendor` plus one
// hostile service per tools/list behaviour, all run as real children.
import { HOSTILE_VENDOR_PATH } from "../fixtures/paths.js";
import { fixtureRegistryDoc, TSX_LOADER } from "./broker-harness.js";

const HOSTILE_TOOLS = {
  echo: ["borrowable", "read"],
  hang: ["borrowable", "read"],
  daemonize: ["borrowable", "read"],
  flood_stdout: ["borrowable", "read"],
};

/** `vendor` plus `hostile` (normal list), `bomb` (endless), `repeat` (repeated cursor), `huge` (one huge page); events go to `eventLog`. */
export function hostileRegistryDoc(eventLog: string): unknown {
  const base = fixtureRegistryDoc() as { services: { vendor: { capture: unknown } } };
  const hostile = (mode: string) => ({
    transport: {
      type: "stdio",
      command: process.execPath,
      args: ["--import", TSX_LOADER, HOSTILE_VENDOR_PATH],
      env: { HOSTILE_TOOLS_LIST: mode, HOSTILE_EVENT_LOG: eventLog },
      credentialEnv: { VENDOR_TOKEN: "{{token}}" },
    },
    capture: base.services.vendor.capture,
    scopes: ["thread", "user", "shared"],
    tools: HOSTILE_TOOLS,
  });
  return {
    services: {
      vendor: base.services.vendor,
      hostile: hostile("normal"),
      bomb: hostile("endless"),
      repeat: hostile("repeat"),
      huge: hostile("huge"),
    },
  };
}
