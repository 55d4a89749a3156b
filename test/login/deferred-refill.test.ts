// When a login's replacement spare starts (issue 25, item 6): once, at the first pause after the
// person's input, when the login ends, or at the bound, whichever comes first.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { DeferredRefill, REFILL_BOUND_MS, REFILL_QUIET_MS } from "../../src/login/browser/deferred-refill.js";

function refill() {
  const clock = new ManualClock();
  let fills = 0;
  return { clock, r: new DeferredRefill(() => fills++, clock), fills: () => fills };
}

describe("DeferredRefill", () => {
  it("waits for a pause in the person's input, then fills once", () => {
    const { clock, r, fills } = refill();
    r.input();
    clock.advance(REFILL_QUIET_MS - 1);
    r.input();
    clock.advance(REFILL_QUIET_MS - 1);
    expect(fills()).toBe(0);
    clock.advance(1);
    expect(fills()).toBe(1);
    r.input();
    clock.advance(REFILL_BOUND_MS);
    r.now();
    expect(fills()).toBe(1);
  });

  it("fills at the bound when the person keeps typing or never types", () => {
    const typing = refill();
    for (let t = 0; t < REFILL_BOUND_MS; t += REFILL_QUIET_MS / 2) {
      typing.r.input();
      typing.clock.advance(REFILL_QUIET_MS / 2);
    }
    expect(typing.fills()).toBe(1);
    const idle = refill();
    idle.clock.advance(REFILL_BOUND_MS - 1);
    expect(idle.fills()).toBe(0);
    idle.clock.advance(1);
    expect(idle.fills()).toBe(1);
  });

  it("fills at once when the login ends, and never again", () => {
    const { clock, r, fills } = refill();
    r.input();
    r.now();
    expect(fills()).toBe(1);
    clock.advance(REFILL_BOUND_MS * 2);
    r.now();
    expect(fills()).toBe(1);
  });
});
