// Smoke test: the real @modelcontextprotocol/server-gitlab child works against the fake GitLab API.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeGitlab, startFakeGitlab } from "../fixtures/fake-gitlab-api.js";
import { SERVER_GITLAB_BIN } from "../fixtures/paths.js";

const TOKEN = "glpat-smoke-1234567890";

const clients: Client[] = [];
const pids: number[] = [];

async function connectGitlab(apiUrl: string, token: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_GITLAB_BIN],
    env: { PATH: process.env.PATH ?? "", GITLAB_PERSONAL_ACCESS_TOKEN: token, GITLAB_API_URL: apiUrl },
    stderr: "pipe",
  });
  const client = new Client({ name: "smoke", version: "0.0.1" });
  await client.connect(transport);
  if (transport.pid !== null) pids.push(transport.pid);
  clients.push(client);
  return client;
}

function jsonOf(result: Awaited<ReturnType<Client["callTool"]>>): Record<string, unknown> {
  const content = result.content as Array<{ type: string; text?: string }>;
  return JSON.parse(content.map((c) => c.text ?? "").join("")) as Record<string, unknown>;
}

describe("fake GitLab API with the real server-gitlab", () => {
  let gitlab: FakeGitlab;
  let client: Client;

  beforeAll(async () => {
    gitlab = await startFakeGitlab({ tokens: { [TOKEN]: "carol" } });
    client = await connectGitlab(gitlab.apiUrl, TOKEN);
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await gitlab.close();
  });

  it("search_repositories", async () => {
    const result = jsonOf(await client.callTool({ name: "search_repositories", arguments: { search: "widg" } }));
    expect(result.count).toBe(1);
    expect(result.items).toMatchObject([{ id: 42, path_with_namespace: "acme/widgets" }]);
    expect(gitlab.requests.at(-1)).toMatchObject({ method: "GET", path: "/api/v4/projects", token: TOKEN });
  });

  it("get_file_contents (project path with a slash, decoded content)", async () => {
    const result = jsonOf(
      await client.callTool({
        name: "get_file_contents",
        arguments: { project_id: "acme/widgets", file_path: "README.md" },
      }),
    );
    expect(result.content).toBe("# Widgets\n\nHello from the fake GitLab.\n");
    expect(gitlab.requests.at(-1)).toMatchObject({
      method: "GET",
      path: "/api/v4/projects/acme%2Fwidgets/repository/files/README.md",
      query: "?ref=HEAD",
      token: TOKEN,
    });
  });

  it("create_issue (a write) records the body and the author from the token", async () => {
    const result = jsonOf(
      await client.callTool({
        name: "create_issue",
        arguments: { project_id: "42", title: "Broken", description: "It broke", labels: ["bug", "p1"] },
      }),
    );
    expect(result).toMatchObject({ iid: 1, title: "Broken", author: { username: "carol" } });
    expect(gitlab.requests.at(-1)).toMatchObject({
      method: "POST",
      path: "/api/v4/projects/42/issues",
      token: TOKEN,
      body: { title: "Broken", description: "It broke", labels: "bug,p1" },
    });
    expect(gitlab.issues).toHaveLength(1);
  });

  it("the other tools pass server-gitlab's response schemas too", async () => {
    const call = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> =>
      jsonOf(await client.callTool({ name, arguments: args }));
    expect(
      await call("create_or_update_file", {
        project_id: "acme/widgets",
        file_path: "docs/a.md",
        content: "A",
        commit_message: "add a",
        branch: "main",
      }),
    ).toMatchObject({ file_path: "docs/a.md" });
    expect(gitlab.files.get("42:docs/a.md")).toBe("A");
    expect(
      await call("push_files", {
        project_id: "42",
        branch: "main",
        commit_message: "two files",
        files: [{ file_path: "b.txt", content: "B" }],
      }),
    ).toMatchObject({ title: "two files" });
    expect(await call("create_branch", { project_id: "42", branch: "feature" })).toMatchObject({ name: "feature" });
    expect(
      await call("create_merge_request", {
        project_id: "42",
        title: "MR",
        source_branch: "feature",
        target_branch: "main",
      }),
    ).toMatchObject({ title: "MR", state: "opened" });
    expect(await call("fork_repository", { project_id: "42" })).toMatchObject({
      path_with_namespace: "carol/widgets",
    });
    expect(await call("create_repository", { name: "newrepo" })).toMatchObject({
      path_with_namespace: "carol/newrepo",
    });
  });

  it("every request carried the token as a Bearer header", () => {
    expect(gitlab.requests.length).toBeGreaterThan(5);
    expect(gitlab.requests.every((r) => r.token === TOKEN)).toBe(true);
  });

  it("a wrong token gets 401, which server-gitlab surfaces as a JSON-RPC error", async () => {
    const bad = await connectGitlab(gitlab.apiUrl, "glpat-wrong");
    await expect(bad.callTool({ name: "search_repositories", arguments: { search: "x" } })).rejects.toThrow(
      /Unauthorized/,
    );
    expect(gitlab.requests.at(-1)).toMatchObject({ token: "glpat-wrong" });
  });
});
