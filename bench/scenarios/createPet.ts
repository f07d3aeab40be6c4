/** Pet creation on SQLite: every 201 is sent after its commit. */
import { defineScenario } from '../lib/scenario.js';

export default defineScenario({
  name: 'createPet',
  label: 'POST /v1/pets',
  order: 90,
  usesSqlite: true,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.15 }] },
  setup: (ctx) => ctx.sqlite(),
  load: (s) => ({
    pid: s.pid,
    url: s.origin,
    headers: { ...s.auth, 'content-type': 'application/json' },
    requests: [
      { method: 'POST', path: '/v1/pets', body: JSON.stringify({ name: 'Bench pet', categoryId: 3 }) },
    ],
  }),
});
