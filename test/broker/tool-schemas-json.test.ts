import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolInputs, toolOutputs } from "../../src/broker/tool-schemas.js";

// The broker tools' JSON Schemas are converted once and handed out as copies: what every server
// (one per 2026-07-28 request) lists must be exactly zod's own conversion, whatever a caller did
// with an earlier copy.

const TARGET = { target: "draft-2020-12" } as const;

describe("broker tool schemas as JSON Schema", () => {
  for (const [kind, schemas, io] of [
    ["input", toolInputs, "input"],
    ["output", toolOutputs, "output"],
  ] as const) {
    for (const [tool, schema] of Object.entries(schemas)) {
      it(`${tool} ${kind}: equals zod's own conversion, on every ask, and a changed copy changes nothing`, () => {
        const fresh = z.toJSONSchema(schema, { target: "draft-2020-12", io });
        const first = schema["~standard"].jsonSchema[io](TARGET);
        expect(first).toEqual(fresh);
        first.type = "string";
        first.injected = true;
        const second = schema["~standard"].jsonSchema[io](TARGET);
        expect(second).toEqual(fresh);
        expect(second).not.toBe(first);
      });
    }
  }

  it("still validates with zod itself (defaults applied, unknown keys refused)", async () => {
    const ok = await toolInputs.mcp_call["~standard"].validate({
      service: "echo",
      tool: "echo",
      on_behalf_of: "U0ALICE",
    });
    expect(ok).toEqual({ value: { service: "echo", tool: "echo", args: {}, on_behalf_of: "U0ALICE" } });
    const bad = await toolInputs.mcp_call["~standard"].validate({
      service: "echo",
      tool: "echo",
      on_behalf_of: "U0ALICE",
      extra: 1,
    });
    expect("issues" in bad && bad.issues?.length).toBeTruthy();
  });
});
