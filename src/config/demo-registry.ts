import { fileURLToPath } from "node:url";
import { parseRegistry, type ServiceRegistry } from "./registry.js";

// The demo registry: one service, `demo`, run from examples/demo-vendor/ in this package. A
// development start without services.json uses it, so the first start has a service to connect.
// docs/service-registry.md shows the same entry as JSON (its worked example).

/** The demo vendor's script, from src/config or dist/config alike (both two levels below the package root). */
export const DEMO_VENDOR_SCRIPT = fileURLToPath(new URL("../../examples/demo-vendor/server.js", import.meta.url));

/** What a demo token looks like (`demo-<name>-<secret>`); the vendor answers `whoami` with the name. */
export const DEMO_TOKEN_PATTERN = "^demo-[a-z][a-z0-9]{0,31}-[A-Za-z0-9]{6,128}$";

/**
 * The demo registry document. `node` is this process's own executable and the script an absolute
 * path: the vendor child runs in its private HOME, so nothing relative would resolve.
 */
export function demoRegistryDoc(nodePath: string = process.execPath, script: string = DEMO_VENDOR_SCRIPT): unknown {
  return {
    services: {
      demo: {
        displayName: "Demo notes",
        description:
          "The demo vendor shipped in examples/demo-vendor: a notes service whose token names its owner. Notes live in the connection's private HOME for as long as its vendor process runs.",
        transport: {
          type: "stdio",
          command: nodePath,
          args: [script],
          credentialEnv: { DEMO_VENDOR_TOKEN: "{{token}}" },
        },
        capture: {
          strategy: "paste",
          instructions:
            "Paste a demo token of the form demo-<your name>-<at least 6 letters or digits>, for example demo-alice-a1b2c3. The name is who the demo vendor says you are.",
          fields: [{ name: "token", label: "Demo token", secret: true, pattern: DEMO_TOKEN_PATTERN }],
        },
        ttl: "8h",
        scopes: ["thread", "user", "shared"],
        tools: {
          whoami: ["borrowable", "read"],
          list_notes: ["borrowable", "read"],
          get_note: ["borrowable", "read"],
          add_note: ["borrowable", "write"],
          delete_note: ["personal", "write"],
        },
        defaultToolClass: ["personal", "write"],
      },
    },
  };
}

/** The demo registry, validated like any registry file. */
export function demoRegistry(): ServiceRegistry {
  return parseRegistry(demoRegistryDoc(), "(demo registry)");
}
