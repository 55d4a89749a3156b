import { expect, it } from "vitest";
import { BOB, makeHarness, mcpCall, THREAD } from "../integration/broker-harness.js";
import { liveHeapMb } from "../support/gc.js";

// A finished mcp_call leaves nothing behind. Before the fix every call stayed reachable (about
// 5 KB each: its trace, audit, progress closure) because the vendor call's signal was an
// AbortSignal.any composite, which Node keeps alive while it has abort listeners and has not
// aborted; the SDK client adds one and never removes it. A broker answering for weeks grew
// without bound. Measured as live heap after full collections, so timing plays no part.
it("the live heap does not grow with the number of finished calls", async (ctx) => {
  const h = await makeHarness({ realClock: true });
  ctx.onTestFinished(() => h.close());
  await h.connect(BOB);
  const s = await h.session(THREAD);
  s.turn.user = BOB;
  const calls = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const r = await mcpCall(s.client, { tool: "echo", args: { text: `b${i}` }, on_behalf_of: BOB });
      expect(r.structured.status).toBe("ok");
    }
  };
  await calls(200); // warm: caches, memo, JIT
  const before = liveHeapMb();
  await calls(800);
  const grown = liveHeapMb() - before;
  console.log(`live heap after 800 more calls: +${grown.toFixed(2)} MB`);
  // 800 retained calls were about +4 MB; the harness's in-memory log keeps ~0.2 KB per call.
  expect(grown).toBeLessThan(1.5);
}, 120_000);
