/* global module */
/**
 * Which way imports may point (run by `npm run lint`). Layers: db -> modules -> http/app -> server; the
 * HTTP layer is written once for every module and imports none; modules meet only through each other's
 * index.ts and change each other's rows only through the owner's interface; no import circles; what tests,
 * bench and chaos share lives in support/.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'http-imports-no-module',
      comment: 'src/http is used by every module; what it needs of one is handed in by src/app.ts.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'no-module-imports-app',
      comment:
        'Modules are built by the app, never the other way round (settings come typed from src/config.ts).',
      severity: 'error',
      from: { path: '^src/(modules|http|db)/' },
      to: { path: '^src/(app|server)\\.ts$' },
    },
    {
      name: 'config-is-a-type-below-the-app',
      comment:
        'src/config.ts reads the module list (their settings): modules, http and db take Config as a type only, so loading a module never loads config.ts back (a cycle).',
      severity: 'error',
      from: { path: '^src/(modules|http|db)/' },
      to: { path: '^src/config\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'data-does-not-depend-on-http',
      comment:
        'Repositories, decisions and storage work without HTTP (the CLI uses them too); .dependency-cruiser.runtime.cjs also follows what they import.',
      severity: 'error',
      from: { path: ['^src/db/', '^src/modules/[^/]+/(repository|store|decisions)[^/]*\\.ts$'] },
      to: { path: '^src/http/' },
    },
    {
      name: 'db-imports-no-module',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'one-backend-per-file',
      comment:
        "A backend's file (*.sqlite.ts, *.postgres.ts) does not borrow from the other backend's; shared code goes in a neutral file.",
      severity: 'error',
      from: { path: '\\.(sqlite|postgres)\\.ts$' },
      to: { path: '\\.(sqlite|postgres)\\.ts$', pathNot: ['\\.$1\\.ts$', '^src/db/idempotency/'] },
    },
    {
      name: 'no-circular',
      comment:
        'A file never loads itself back through its imports: a circle makes evaluation order decide what is defined. Type-only imports are erased at run time and do not count (Config extends the settings the modules declare, and modules take Config as a type).',
      severity: 'error',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'modules-meet-through-index',
      comment:
        "A module uses another only through that module's index.ts (its declaration and its interface for other modules), never its other files.",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/', pathNot: '(^|/)fixtures\\.ts$' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'the-rest-meets-modules-through-index',
      comment:
        "The app, the server, the CLI and the shared pieces use a module through its index.ts; the collectors of settings and scopes read the modules' declaration files (pure data, so configuration loads no routes).",
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/modules/[^/]+/', '(^|/)fixtures\\.ts$'] },
      to: {
        path: '^src/modules/[^/]+/',
        pathNot: ['^src/modules/[^/]+/index\\.ts$', '^src/modules/[^/]+/(settings|scopes)\\.ts$'],
      },
    },
    {
      name: 'nothing-imports-test',
      comment: 'Tests import the code; the code, the benchmarks, chaos runs and support/ never import tests.',
      severity: 'error',
      from: { path: '^(src|bench|chaos|support|packages/client/src)/' },
      to: { path: '^test/' },
    },
    {
      name: 'fixtures-are-for-tests',
      comment:
        "A module's fixtures.ts is test code kept beside the module (excluded from the build): production files never import one.",
      severity: 'error',
      from: { path: '^src/', pathNot: '(^|/)fixtures\\.ts$' },
      to: { path: ['^src/modules/fixtures\\.ts$', '^src/modules/[^/]+/fixtures\\.ts$'] },
    },
    {
      name: 'src-imports-no-tooling',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(bench|chaos|support|packages)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.test.json' },
  },
};
