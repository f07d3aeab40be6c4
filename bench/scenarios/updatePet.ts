/**
 * PATCH of existing pets (merge patch of the name, alternating between two values so every request is a
 * real change and bumps the version), over 1,000 fixed ids spread across the table.
 */
import { defineScenario } from '../lib/scenario.js';
import { SQLITE_PETS } from '../lib/service.js';

export default defineScenario({
  name: 'updatePet',
  label: 'PATCH /v1/pets/{id}',
  order: 86,
  usesSqlite: true,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.15 }] },
  setup: (ctx) => ctx.sqlite(),
  load: (s) => ({
    pid: s.pid,
    url: s.origin,
    headers: { ...s.auth, 'content-type': 'application/merge-patch+json' },
    requests: Array.from({ length: 1000 }, (_, i) => ({
      method: 'PATCH' as const,
      path: `/v1/pets/${1 + ((i * 7919 + 13) % SQLITE_PETS)}`,
      body: JSON.stringify({ name: i % 2 === 0 ? 'Bench Even' : 'Bench Odd' }),
    })),
  }),
});
