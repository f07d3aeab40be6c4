/* global module */
/**
 * The second pass of `npm run lint:layers`: the graph as it loads at run time (type-only imports are erased,
 * so they are left out), for the rule that looks through intermediate files. A module's index.ts is where
 * its declaration loads its routes, so the walk stops there: each module's own data files are held to the
 * rule in their own right.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'data-does-not-reach-http',
      comment:
        'Repositories, decisions and storage work without HTTP (the CLI uses them too), not even through a schema or helper they import.',
      severity: 'error',
      from: { path: ['^src/db/', '^src/modules/[^/]+/(repository|store|decisions)[^/]*\\.ts$'] },
      to: { path: '^src/http/', reachable: true },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules', '^src/modules/[^/]+/index\\.ts$'] },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: false,
    tsConfig: { fileName: 'tsconfig.test.json' },
  },
};
