// The layering of src/, written once and checked by `npm run layering` (part of `npm run check`).
// Each tier may import from the tiers below it and from its own folder; folders in one tier are peers
// and do not import each other. Type-only imports follow the same rule: a type is an import too.
// Tests (*.test.ts) are left out: a test may reach any layer it exercises.

/** Bottom to top. Each entry: a tier's folders, each a name and the path pattern of its files. */
const tiers = [
  // Leaves: the root files (errors, types, logger, config, parse-input, json-http, tool-result, metrics, …),
  // except the façade's own files and the package entry point, named in their tiers below.
  { leaves: '^src/(?!(cairn|health|version|index)\\.ts$)[^/]+\\.ts$' },
  { text: '^src/text/' },
  // The ranking engines: bm25, rrf, vector floor, top-k index (not the pipeline that runs them, below).
  { search: '^src/search/(?!(pipeline|explain)[^/]*\\.ts$)' },
  { store: '^src/store/' },
  { embed: '^src/embed/', llm: '^src/llm/', auth: '^src/auth/' },
  // The retrieval pipeline: runs the keyword and vector paths over store and embedder, fuses, explains.
  { pipeline: '^src/search/(pipeline|explain)[^/]*\\.ts$' },
  { memory: '^src/memory/', catalog: '^src/catalog/', knowledge: '^src/knowledge/', proxy: '^src/proxy/' },
  // Run and chat history read memory's scope schema and limits, and record the catalog's tool calls.
  { history: '^src/history/' },
  // The façade and the parts it is built from: health checks and the build's versions.
  { facade: '^src/(cairn|health|version)\\.ts$' },
  { mcp: '^src/mcp/', ui: '^src/ui/' },
  // The Hono app mounts /mcp and /ui.
  { http: '^src/http/' },
  { cli: '^src/cli/', client: '^src/client/', api: '^src/index\\.ts$' },
];

const tierOf = tiers.flatMap((tier, level) => Object.entries(tier).map(([name, path]) => ({ name, path, level })));

const layerRules = tierOf.map(({ name, path, level }) => ({
  name: `layer-${name}`,
  comment: `${name} imports only from its own folder and the tiers below it (.dependency-cruiser.mjs)`,
  severity: 'error',
  from: { path, pathNot: '\\.test\\.ts$' },
  to: {
    path: '^src/',
    pathNot: [path, ...tierOf.filter((other) => other.level < level).map((other) => other.path)],
  },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...layerRules,
    {
      name: 'no-cycle',
      comment: 'no run-time import cycle (a cycle through type-only imports is erased when compiled)',
      severity: 'error',
      from: { path: '^src/', pathNot: '\\.test\\.ts$' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'resolvable',
      comment: 'every relative import resolves, so no import escapes the rules above by a wrong path',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true, path: '^\\.' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js'] },
  },
};
