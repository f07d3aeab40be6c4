/** One pet by id, over 1,000 fixed ids spread across the table so lookups do not all hit the same page. */
import { defineScenario } from '../lib/scenario.js';
import { SQLITE_PETS } from '../lib/service.js';

export default defineScenario({
  name: 'getPet',
  label: 'GET /v1/pets/{id}',
  order: 80,
  usesSqlite: true,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.4 }] },
  setup: (ctx) => ctx.sqlite(),
  load: (s) => ({
    pid: s.pid,
    url: s.origin,
    headers: s.auth,
    requests: Array.from({ length: 1000 }, (_, i) => ({
      method: 'GET' as const,
      path: `/v1/pets/${1 + ((i * 7919 + 13) % SQLITE_PETS)}`,
    })),
  }),
});
