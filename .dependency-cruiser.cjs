/**
 * The import boundaries `npm run lint` checks (docs/architecture.md, "Dependency direction").
 *
 * LAYERS is the one list: the service's folders from the top (the entry) to the ground. A file
 * may import files of its own folder and of folders below it, never of a folder above it, and no
 * file may import itself back through a cycle. Since every folder has its own place in the list,
 * no two folders can import each other either (no folder-level cycle).
 *
 * Imports that break the rule today are listed, each by file, in
 * `.dependency-cruiser-known-violations.json` (`npm run boundaries:baseline` rewrites it): they
 * are the restructuring still to do, and the lint fails on any import against the direction that
 * is not there. The list only ever shrinks.
 */
const LAYERS = [
  // entry
  ['src/main.ts'],
  // wiring: the app, the roles, the services and the schema
  ['src/server'],
  // REST paths -> GraphQL operations -> legacy JSON
  ['rest-compat'],
  // domain modules, those that use others first
  ['src/chat-bridge'],
  ['src/telephony'],
  ['src/billing'],
  ['src/quotas'],
  ['src/tasks'],
  ['src/batches'],
  ['src/webhooks'],
  ['src/jobs'],
  ['src/media'],
  ['src/models'],
  ['src/secrets'],
  ['src/idempotency'],
  ['src/rate-limits'],
  ['src/auth'],
  ['src/teams'],
  ['src/users'],
  ['src/documents'],
  // ports and their adapters
  ['src/executors'],
  ['src/storage'],
  ['src/events'],
  ['src/metrics'],
  // ground
  ['src/graphql'],
  ['src/http'],
  ['src/db'],
  ['src/config.ts', 'src/config'],
  ['src/common'],
];

const escape = (path) => path.replace(/[.]/g, '\\.');
const pattern = (folders) => `^(${folders.map(escape).join('|')})(/|$)`;

const upward = LAYERS.slice(1).map((folders, index) => ({
  name: `up-from-${folders.join('+')}`,
  comment: `${folders.join(', ')} may not import a layer above it`,
  severity: 'error',
  from: { path: pattern(folders) },
  to: { path: pattern(LAYERS.slice(0, index + 1).flat()) },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'job-sql-private',
      comment:
        "the job lifecycle's SQL fragments are its store's own; other modules add to its statements through job.statement-parts.port.ts",
      severity: 'error',
      from: { path: '^(src|rest-compat)/', pathNot: '^src/jobs/job[.]store[.]ts$' },
      to: { path: '^src/jobs/job[.]sql[.]ts$' },
    },
    {
      name: 'config-through-its-reader',
      comment:
        "the configuration's areas (src/config/) are read through src/config.ts, the one reader of process.env",
      severity: 'error',
      from: { path: '^(src|rest-compat)/', pathNot: '^src/config([.]ts$|/)' },
      to: { path: '^src/config/' },
    },
    {
      name: 'no-circular',
      comment: 'no import cycle between files',
      severity: 'error',
      from: { path: '^(src|rest-compat)/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: {
      path: '(^|/)(rest-compat/generated|web|test|test-slurm|test-browser|bench|scripts|migrations)/|\\.spec\\.ts$',
    },
    includeOnly: '^(src|rest-compat)/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
