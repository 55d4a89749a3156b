// The folder-level import graph of src/ (npm run lint:deps, in .ci/run): no folder may reach itself
// through another. A folder's edges are those of every file under it, subfolders included, and type
// imports count (tsPreCompilationDeps), so a port and its record types sit in the folder that owns
// them, adapters depend on ports, and a type two folders share lives below both (src/domain).

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-folder-cycle",
      comment:
        "A folder of src/ imports (values or types) from a folder that imports it back, directly or through others.",
      severity: "error",
      scope: "folder",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    includeOnly: "^src/",
  },
};
