#!/usr/bin/env node
// Entry point of the installed CLI: the compiled JavaScript built by `npm run build` (run by the
// package's `prepare` on `npm ci`, `npm install` from a checkout and `npm pack`). It calls main()
// explicitly, so it works through any symlink npm puts in front of it.
import { main } from "../dist/cli/main.js";
await main();
