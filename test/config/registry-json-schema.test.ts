import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { registryJsonSchema } from "../../src/config/registry-json-schema.js";

const SCHEMA_FILE = new URL("../../schema/service-registry.schema.json", import.meta.url);

describe("schema/service-registry.schema.json", () => {
  it("is exactly what registryJsonSchema() generates (regenerate with `slaude-connect registry schema`)", () => {
    // A missing file fails here: the committed schema must exist and be current.
    const text = readFileSync(SCHEMA_FILE, "utf8");
    expect(JSON.parse(text)).toEqual(registryJsonSchema());
  });

  it("describes a strict registry with the fail-closed default tool class", () => {
    const schema = registryJsonSchema() as { $id: string; additionalProperties: unknown; required: string[] };
    expect(schema.$id).toBe("https://slaude-connect.dev/schema/service-registry.schema.json");
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(["services"]);
    expect(JSON.stringify(schema)).toContain('"default":["personal","write"]');
  });
});
