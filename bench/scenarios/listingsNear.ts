/** Search near a city, one filter, on the 100,000-pet catalogue (SQLite), against its own same bytes. */
import { measureSameBytes, NEAR, sqliteCatalogue } from '../lib/catalogue.js';
import { defineScenario } from '../lib/scenario.js';

export const NEAR_PATH = `/v1/listings?near=${NEAR}&radiusKm=50&goodWithChildren=true&limit=20`;

export default defineScenario({
  name: 'listingsNear',
  label: `GET ${NEAR_PATH} (100,000 pets, 20 % with photos)`,
  order: 300,
  tags: ['catalogue'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.25 }] },
  setup: (ctx) => sqliteCatalogue(ctx),
  measure: async (ctx, catalogue) =>
    (await measureSameBytes(ctx, catalogue, 'listings near, goodWithChildren', NEAR_PATH)).outcome,
});
