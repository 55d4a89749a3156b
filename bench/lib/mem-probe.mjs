// Loaded into a broker process with `--import` by bench/memory.ts only: on SIGUSR2 it writes the
// process's own memory breakdown (process.memoryUsage, V8 heap spaces) as JSON to the file named by
// BENCH_MEM_PROBE_FILE (and, under --expose-gc, the same after a full collection). Never part of the product.
import { writeFileSync } from "node:fs";
import v8 from "node:v8";

const file = process.env.BENCH_MEM_PROBE_FILE;
if (file)
  process.on("SIGUSR2", () => {
    const snap = () => ({
      mem: process.memoryUsage(),
      heap: v8.getHeapStatistics(),
      spaces: Object.fromEntries(
        v8.getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }]),
      ),
    });
    const before = snap();
    // With --expose-gc, also what is live after a full collection.
    let afterGc;
    if (typeof globalThis.gc === "function") {
      globalThis.gc();
      afterGc = snap();
    }
    writeFileSync(file, JSON.stringify({ ...before, afterGc }));
  });
