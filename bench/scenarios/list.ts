/** The service's main read: the first page of 20 pets on SQLite, with auth, rate limiting and logging. */
import { defineScenario } from '../lib/scenario.js';

export default defineScenario({
  name: 'list',
  label: 'GET /v1/pets?limit=20',
  order: 10,
  usesSqlite: true,
  target: {
    bounds: [
      // Its target in the table of docs/performance.md.
      { metric: 'ratio', atLeast: 0.45 },
      { metric: 'p99', atMost: 10 },
    ],
  },
  setup: (ctx) => ctx.sqlite(),
  load: (s) => ({ pid: s.pid, url: `${s.origin}/v1/pets?limit=20`, headers: s.auth }),
});
