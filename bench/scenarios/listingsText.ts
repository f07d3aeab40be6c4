/** Full-text search for two words over the 100,000-pet catalogue (SQLite FTS5), against its own same bytes. */
import { measureSameBytes, sqliteCatalogue } from '../lib/catalogue.js';
import { defineScenario } from '../lib/scenario.js';

export const TEXT_PATH = '/v1/listings?q=playful%20beagle&limit=20';

export default defineScenario({
  name: 'listingsText',
  label: `GET ${TEXT_PATH} (100,000 pets)`,
  order: 310,
  tags: ['catalogue'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.25 }] },
  setup: (ctx) => sqliteCatalogue(ctx),
  measure: async (ctx, catalogue) =>
    (await measureSameBytes(ctx, catalogue, 'listings q=two words', TEXT_PATH)).outcome,
});
