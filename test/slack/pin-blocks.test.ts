import { describe, expect, it } from "vitest";
import { diffDefinitions } from "../../src/pinning/diff.js";
import { diffExcerpt, MAX_DIFF_CHARS, toolChangeBlocks } from "../../src/slack/pin-blocks.js";
import type { ToolPin } from "../../src/store/records.js";

// The App Home's diff excerpt is vendor text inside a Slack code block: it stays within Block Kit's
// section limit after escaping, never closes the code block, and says when it was cut.

const pin = (pinned: string, pending: string, tool = "t"): ToolPin => ({
  teamId: "T1",
  service: "vendor",
  tool,
  status: "quarantined",
  pinnedHash: "a".repeat(64),
  pinnedDefinition: pinned,
  pendingHash: "b".repeat(64),
  pendingDefinition: pending,
  firstSeenAt: 1,
  changedAt: 1,
  decidedAt: null,
  decidedBy: null,
});

describe("App Home diff excerpt", () => {
  it("keeps changes with context, leaves unchanged lines out and says so", () => {
    const before = Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n");
    const after = before.replace("line 15", "line fifteen");
    const e = diffExcerpt(diffDefinitions(before, after));
    expect(e).toMatchObject({ omitted: true, cut: false });
    expect(e.text.split("\n")).toEqual([
      "  …",
      "  line 13",
      "  line 14",
      "- line 15",
      "+ line fifteen",
      "  line 16",
      "  line 17",
      "  …",
    ]);
  });

  it("hostile text: escaped before it is measured, never closes the code block, cut within the limit", () => {
    const hostile = Array.from({ length: 400 }, () => "&&&<<<>>>``` <!channel> ```").join("\n");
    const e = diffExcerpt(diffDefinitions(null, hostile));
    expect(e.cut).toBe(true);
    expect(e.text.length).toBeLessThanOrEqual(MAX_DIFF_CHARS);
    expect(e.text).not.toContain("```");
    expect(e.text).not.toMatch(/[<>]/);
    expect(e.text).not.toMatch(/&(?!amp;|lt;|gt;)/);
    const blocks = toolChangeBlocks([pin("{}", hostile, "x".repeat(300) + "&".repeat(200))]);
    for (const b of blocks)
      if (b.type === "section") expect((b as { text: { text: string } }).text.text.length).toBeLessThanOrEqual(3000);
    // A tool name too long for a button value gets no buttons (the CLI decides it).
    expect(blocks.some((b) => b.type === "actions")).toBe(false);
  });
});
