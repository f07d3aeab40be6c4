/**
 * PATCH of existing pets, each a real rename (bench/lib/orders.ts, updatePetLoad): every request gives a pet
 * a name it does not have, so the search words are indexed again, over 10,000 pets spread across the table.
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
