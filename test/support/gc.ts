import v8 from "node:v8";
import vm from "node:vm";

// A real, full garbage collection for memory tests, without starting the test process with
// --expose-gc: the flag is set at run time and `gc` taken from a fresh context.
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

/** Collects twice (weak callbacks of the first pass are run by the second). */
export function fullGc(): void {
  gc();
  gc();
}

/** Heap in use after a full collection, in MB. */
export function liveHeapMb(): number {
  fullGc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}
