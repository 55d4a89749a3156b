#!/usr/bin/env node
// The CLI run from the TypeScript sources through tsx (a development dependency): what the tests
// spawn, so they exercise the code as checked out, never a stale dist/. The packed-tarball test
// covers the real bin/slaude-connect.js.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../../src/cli/main.ts");
await main();
