/**
 * PATCH of existing pets (merge patch of the name, alternating between two values so every request is a
 * real change and bumps the version), over 1,000 fixed ids spread across the table.
 */
import { updatePetLoad } from '../lib/orders.js';
import { defineScenario } from '../lib/scenario.js';
import { SQLITE_PETS } from '../lib/service.js';

export default defineScenario({
  name: 'updatePet',
  label: 'PATCH /v1/pets/{id}',
  order: 86,
  usesSqlite: true,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.15 }] },
  setup: (ctx) => ctx.sqlite(),
  load: (s) => updatePetLoad(s.pid, s.origin, s.auth, SQLITE_PETS),
});
