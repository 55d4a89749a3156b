// The sizes a confined browser is given (its viewport, its largest frame), checked once at launch.
import { ConfinedBrowserError } from "./errors.js";

export type Size = { width: number; height: number };

/** `s` when both sides are whole pixels in 100..4096; throws ConfinedBrowserError("invalid_options") otherwise. */
export function checkSize(name: string, s: Size): Size {
  const ok = (n: number) => Number.isInteger(n) && n >= 100 && n <= 4096;
  if (!ok(s.width) || !ok(s.height))
    throw new ConfinedBrowserError("invalid_options", `${name} must be whole pixels between 100 and 4096`);
  return { width: s.width, height: s.height };
}
