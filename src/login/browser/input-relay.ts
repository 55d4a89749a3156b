// Input relayed from the viewer to the page on screen: mouse, wheel, keys and text, one at a time in
// call order, with coordinates scaled from the last frame's pixels to the page's CSS pixels.
import type { Page } from "playwright-core";
import { type BrowserHooks, errorMessage } from "./hooks.js";
import type { FrameGeometry } from "./screencast.js";

/** Mouse input, in the pixel space of the last frame sent. */
export interface MouseInput {
  type: "move" | "down" | "up";
  x: number;
  y: number;
  button?: "left" | "right" | "middle";
  clickCount?: number;
}

// KeyboardEvent.key values that Playwright names differently.
const KEY_ALIASES: Record<string, string> = {
  " ": "Space",
  Spacebar: "Space",
  Esc: "Escape",
  Left: "ArrowLeft",
  Right: "ArrowRight",
  Up: "ArrowUp",
  Down: "ArrowDown",
  Del: "Delete",
  OS: "Meta",
  Win: "Meta",
};

/**
 * Runs input on the page on screen, after the inputs before it. Never rejects: input racing a
 * closing page is dropped (and logged unless the browser is closing).
 */
export class InputRelay {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly target: () => Page | undefined,
    private readonly geometry: () => FrameGeometry | undefined,
    private readonly hooks: BrowserHooks,
  ) {}

  /** Mouse input at (x, y) in frame pixels; down/up move there first. */
  mouse(e: MouseInput): Promise<void> {
    return this.run("mouse", async (page) => {
      const p = this.toPage(e.x, e.y);
      await page.mouse.move(p.x, p.y);
      const opts = { button: e.button ?? "left", clickCount: e.clickCount ?? 1 } as const;
      if (e.type === "down") await page.mouse.down(opts);
      else if (e.type === "up") await page.mouse.up(opts);
    });
  }

  /** Scrolls by (deltaX, deltaY) CSS pixels with the pointer at (x, y) in frame pixels. */
  wheel(e: { x: number; y: number; deltaX: number; deltaY: number }): Promise<void> {
    return this.run("wheel", async (page) => {
      const p = this.toPage(e.x, e.y);
      await page.mouse.move(p.x, p.y);
      await page.mouse.wheel(finite(e.deltaX), finite(e.deltaY));
    });
  }

  /** A key press or release; `key` is a KeyboardEvent.key value ("Enter", "Backspace", "a"…). */
  key(e: { type: "down" | "up"; key: string }): Promise<void> {
    const key = KEY_ALIASES[e.key] ?? e.key;
    return this.run("key", async (page) => {
      try {
        await (e.type === "down" ? page.keyboard.down(key) : page.keyboard.up(key));
      } catch (err) {
        if (!/Unknown key/.test(errorMessage(err))) throw err;
        // A character outside Playwright's US layout ("é", "ß") is typed as text; other unknown
        // keys ("Dead", "Unidentified", "Process" from IMEs) carry nothing to type.
        if (e.type === "down" && [...e.key].length === 1) await page.keyboard.insertText(e.key);
      }
    });
  }

  /** Inserts text at the focus, as an IME would (no key events). */
  text(s: string): Promise<void> {
    return this.run("text", (page) => page.keyboard.insertText(s));
  }

  private run(kind: string, fn: (page: Page) => Promise<void>): Promise<void> {
    const next = this.chain.then(async () => {
      const page = this.target();
      if (this.hooks.closing() || !page || page.isClosed()) return;
      try {
        await fn(page);
      } catch (err) {
        if (!this.hooks.closing() && !page.isClosed())
          this.hooks.warn("login browser input failed", { kind, error: errorMessage(err) });
      }
    });
    this.chain = next;
    return next;
  }

  /** Frame pixels to CSS pixels of the page, clamped to the viewport. */
  private toPage(x: number, y: number): { x: number; y: number } {
    const f = this.geometry();
    if (!f) return { x: Math.max(0, finite(x)), y: Math.max(0, finite(y)) };
    return {
      x: clamp((finite(x) * f.pageWidth) / f.width, f.pageWidth),
      y: clamp((finite(y) * f.pageHeight) / f.height, f.pageHeight),
    };
  }
}

function finite(n: number): number {
  return Number.isFinite(n) ? n : 0;
}

function clamp(n: number, size: number): number {
  return Math.min(Math.max(0, n), Math.max(0, size - 1));
}
