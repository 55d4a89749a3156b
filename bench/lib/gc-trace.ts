// V8's collections as `--trace-gc-nvp` prints them (one `name=value` line per collection on the
// process's stdout): counted over a window of the run and summed per call.
import type { Readable } from "node:stream";

/** Collects the trace lines `out` prints while `counting` is on. */
export class GcTrace {
  private lines: string[] = [];
  /** The last chunk's unfinished line. */
  private partial = "";
  counting = false;

  constructor(out: Readable) {
    out.on("data", (b: Buffer) => {
      const got = (this.partial + b.toString("utf8")).split("\n");
      this.partial = got.pop() ?? "";
      if (this.counting) for (const l of got) if (/\bgc=/.test(l)) this.lines.push(l);
    });
  }

  /** The window's scavenges and full collections, per call over `calls`. */
  summary(calls: number): string {
    const num = (l: string, k: string) => Number(new RegExp(`\\b${k}=([\\d.]+)`).exec(l)?.[1] ?? 0);
    const sum = (ls: string[], k: string) => ls.reduce((a, l) => a + num(l, k), 0);
    const scavenges = this.lines.filter((l) => /\bgc=s\b/.test(l));
    const full = this.lines.filter((l) => !/\bgc=s\b/.test(l));
    const kb = (ls: string[], k: string) => `${(sum(ls, k) / calls / 1024).toFixed(1)} KB`;
    const us = (ls: string[]) => `${((sum(ls, "pause") / calls) * 1000).toFixed(1)} µs`;
    return [
      `collections over ${calls} warm calls: ${scavenges.length} scavenges, ${full.length} full`,
      `per call: allocated ${kb(scavenges, "allocated")} (counted at scavenges), promoted ${kb(scavenges, "promoted")}, scavenge pauses ${us(scavenges)}, full collection pauses ${us(full)}`,
    ].join("\n");
  }
}
