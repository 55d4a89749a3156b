// The pure half of `registry inspect`: classes suggested by annotations, the comparison with an
// entry, and the pasted block.
import { describe, expect, it } from "vitest";
import { toolClassSchema } from "../../src/config/registry-schema.js";
import {
  compareTools,
  nameWords,
  printableName,
  renderToolsBlock,
  suggestToolClass,
} from "../../src/config/tool-inspection.js";

describe("suggestToolClass", () => {
  it.each([
    [{ name: "list_issues", annotations: { readOnlyHint: true } }, ["borrowable", "read"], "readOnlyHint"],
    [
      { name: "list_issues", annotations: { readOnlyHint: true, destructiveHint: true } },
      ["borrowable", "read"],
      "readOnlyHint",
    ],
    [{ name: "delete_page", annotations: { destructiveHint: true } }, ["borrowable", "write"], "destructiveHint"],
    [
      { name: "add_label", annotations: { readOnlyHint: false, destructiveHint: false } },
      ["borrowable", "write"],
      "readOnlyHint: false",
    ],
    [{ name: "create_issue" }, ["borrowable", "write"], "no annotations: review"],
    [
      { name: "get_me", annotations: { readOnlyHint: true } },
      ["personal", "read"],
      "readOnlyHint, about the caller's own account",
    ],
    [
      { name: "API-get-self", annotations: { readOnlyHint: true } },
      ["personal", "read"],
      "readOnlyHint, about the caller's own account",
    ],
    [
      { name: "atlassianUserInfo", annotations: { readOnlyHint: true } },
      ["personal", "read"],
      "readOnlyHint, about the caller's own account",
    ],
    [
      { name: "list_my_issues", annotations: { readOnlyHint: true } },
      ["personal", "read"],
      "readOnlyHint, about the caller's own account",
    ],
    [{ name: "update_profile" }, ["personal", "write"], "no annotations: review, about the caller's own account"],
    // Words, not substrings: "menu" is not "me".
    [{ name: "get_menu", annotations: { readOnlyHint: true } }, ["borrowable", "read"], "readOnlyHint"],
  ] as const)("%o → %o (%s)", (tool, words, reason) => {
    expect(suggestToolClass(tool)).toEqual({ name: tool.name, words, reason });
  });

  it("splits snake, kebab and camel case names into words", () => {
    expect(nameWords("searchJiraIssuesUsingJql")).toEqual(["search", "jira", "issues", "using", "jql"]);
    expect(nameWords("API-get-self")).toEqual(["api", "get", "self"]);
    expect(nameWords("get_me")).toEqual(["get", "me"]);
  });
});

describe("compareTools", () => {
  it("names offered tools the entry misses and named tools the vendor lacks, sorted", () => {
    const offered = [{ name: "b" }, { name: "a" }, { name: "c" }];
    expect(compareTools(["c", "z", "a_typo"], offered)).toEqual({ unclassified: ["a", "b"], missing: ["a_typo", "z"] });
    expect(compareTools(["a", "b", "c"], offered)).toEqual({ unclassified: [], missing: [] });
  });
});

describe("renderToolsBlock", () => {
  it("prints sorted, valid registry classes that parse back as JSON", () => {
    const block = renderToolsBlock([
      suggestToolClass({ name: "z_write" }),
      suggestToolClass({ name: "a_read", annotations: { readOnlyHint: true } }),
    ]);
    expect(block).toBe('"tools": {\n  "a_read": ["borrowable", "read"],\n  "z_write": ["borrowable", "write"]\n}');
    const tools = (JSON.parse(`{${block}}`) as { tools: Record<string, unknown> }).tools;
    for (const words of Object.values(tools)) expect(toolClassSchema.safeParse(words).success).toBe(true);
  });
});

describe("printableName", () => {
  it("escapes terminal control characters a hostile vendor could put in a tool name", () => {
    expect(printableName("evil\u001b[2J\u009b31m\u007fname")).toBe("evil\\u001b[2J\\u009b31m\\u007fname");
    expect(printableName("API-get-self")).toBe("API-get-self");
  });
});
