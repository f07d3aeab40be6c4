/** `listingsNear` with every request a page-cache miss: what the search itself costs (report). */
import { measureUncached, sqliteCatalogue } from '../lib/catalogue.js';
import { defineScenario } from '../lib/scenario.js';
import { NEAR_PATH } from './listingsNear.js';

export default defineScenario({
  name: 'listingsNearUncached',
  label: `${NEAR_PATH}, no page from the cache`,
  order: 301,
  tags: ['catalogue'],
  usesSqlite: false,
  setup: (ctx) => sqliteCatalogue(ctx),
  measure: (ctx, catalogue) => measureUncached(ctx, catalogue, 'listings near, uncached', NEAR_PATH),
});
