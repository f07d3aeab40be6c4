/**
 * `listingsDepth` for `sort=distance` with every request a page-cache miss: page 51's cost against page
 * 1's when each is read from the database (report; the judged row answers both from the cache).
 */
import { NEAR, measureUncached, pathAfter, sqliteCatalogue } from '../lib/catalogue.js';
import { defineScenario } from '../lib/scenario.js';

const DEPTH = 50;
const FIRST = `/v1/listings?near=${NEAR}&radiusKm=50&sort=distance&limit=20`;

export default defineScenario({
  name: 'listingsDepthUncached',
  label: `GET /v1/listings near a city, sort=distance, page ${DEPTH + 1} ÷ page 1, no page from the cache`,
  order: 321,
  tags: ['catalogue'],
  usesSqlite: false,
  setup: (ctx) => sqliteCatalogue(ctx),
  async measure(ctx, catalogue) {
    const top = await measureUncached(ctx, catalogue, 'listings distance page 1, uncached', FIRST);
    const deep = await pathAfter(catalogue, FIRST, DEPTH);
    const down = await measureUncached(ctx, catalogue, `listings distance page ${DEPTH + 1}, uncached`, deep);
    const a = top.row.ratio ?? NaN;
    const b = down.row.ratio ?? NaN;
    const cost = a / b;
    return {
      row: {
        value: `${cost.toFixed(2)}×`,
        note:
          `page 1 ratio ${a.toFixed(2)} (${top.row.cpuUs?.toFixed(0)} µs, p99 ${top.row.p99?.toFixed(0)} ms); ` +
          `page ${DEPTH + 1} ratio ${b.toFixed(2)} (${down.row.cpuUs?.toFixed(0)} µs, p99 ${down.row.p99?.toFixed(0)} ms)`,
      },
      metrics: { cost },
      failures: top.failures + down.failures,
    };
  },
});
