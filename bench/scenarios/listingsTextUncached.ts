/** `listingsText` with every request a page-cache miss: what the word search itself costs (report). */
import { measureUncached, sqliteCatalogue } from '../lib/catalogue.js';
import { defineScenario } from '../lib/scenario.js';
import { TEXT_PATH } from './listingsText.js';

export default defineScenario({
  name: 'listingsTextUncached',
  label: `${TEXT_PATH}, no page from the cache`,
  order: 311,
  tags: ['catalogue'],
  usesSqlite: false,
  setup: (ctx) => sqliteCatalogue(ctx),
  measure: (ctx, catalogue) => measureUncached(ctx, catalogue, 'listings q, uncached', TEXT_PATH),
});
