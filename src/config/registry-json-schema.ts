import { z } from "zod";
import { registrySchema } from "./registry-schema.js";

/** The registry's JSON Schema, generated from the zod schema so editors validate the same rules' shape. */
export function registryJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(registrySchema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return {
    ...schema,
    $id: "https://slaude-connect.dev/schema/service-registry.schema.json",
    title: "slaude-connect service registry",
  };
}
