// Loaded into a broker process with `--import` by bench/memory.ts only: on SIGUSR2 it writes the
// process's own memory breakdown (process.memoryUsage, V8 heap spaces) as JSON to the file named by
// BENCH_MEM_PROBE_FILE (and, under --expose-gc, the same after a full collection). Never part of the product.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import v8 from "node:v8";

const file = process.env.BENCH_MEM_PROBE_FILE;
let snapshots = 0;
// With BENCH_MEM_HEAP_PROF_DIR, V8's sampling heap profiler runs from start-up, counting the objects a
// full collection freed but no young collection did (what was promoted, then died) beside the live
// ones; each probe writes what was sampled since the previous one as a .heapprofile.
const profDir = process.env.BENCH_MEM_HEAP_PROF_DIR;
const inspector = profDir ? new Session() : undefined;
const startSampling = () =>
  inspector?.post("HeapProfiler.startSampling", {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: false,
  });
if (inspector) {
  inspector.connect();
  startSampling();
}
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
    // With BENCH_MEM_SNAPSHOT_DIR, also a heap snapshot per probe (numbered), to compare what is retained.
    const dir = process.env.BENCH_MEM_SNAPSHOT_DIR;
    if (dir) v8.writeHeapSnapshot(`${dir}/probe-${snapshots + 1}.heapsnapshot`);
    const n = ++snapshots;
    if (inspector)
      inspector.post("HeapProfiler.stopSampling", (err, r) => {
        if (!err) writeFileSync(`${profDir}/probe-${n}.heapprofile`, JSON.stringify(r.profile));
        startSampling();
      });
    writeFileSync(file, JSON.stringify({ ...before, afterGc }));
  });
