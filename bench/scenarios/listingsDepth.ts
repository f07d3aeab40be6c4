/**
 * What a page 50 deep costs against the first, for the `newest` and `distance` sorts of the search near a
 * city (keyset paging: the cursor the service issued, reached by following `Link: rel="next"`). The cost is
 * the first page's ratio ÷ the deep page's, each against the same baseline; the row judges the larger.
 */
import { terminate } from '../../support/processes.js';
import { NEAR, pathAfter, sameBytesBaseline, sqliteCatalogue } from '../lib/catalogue.js';
import { Interleaved } from '../lib/load.js';
import { defineScenario } from '../lib/scenario.js';

const DEPTH = 50;
const first = (sort: string) => `/v1/listings?near=${NEAR}&radiusKm=50&sort=${sort}&limit=20`;

export default defineScenario({
  name: 'listingsDepth',
  label: `GET /v1/listings near a city, page ${DEPTH + 1} ÷ page 1 (sort newest and distance)`,
  order: 320,
  tags: ['catalogue'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'cost', atMost: 1.5 }] },
  setup: (ctx) => sqliteCatalogue(ctx),
  async measure(ctx, catalogue) {
    const baseline = await sameBytesBaseline(ctx, catalogue, `${catalogue.origin}${first('newest')}`);
    try {
      const bench = new Interleaved(
        { pid: baseline.child.pid!, url: `${baseline.origin}${first('newest')}` },
        ctx.settings,
        ctx.log,
      );
      const costs: Record<string, number> = {};
      let failures = 0;
      const parts: string[] = [];
      for (const sort of ['newest', 'distance']) {
        const deep = await pathAfter(catalogue, first(sort), DEPTH);
        const target = (path: string) => ({
          pid: catalogue.pid,
          url: `${catalogue.origin}${path}`,
          headers: catalogue.auth,
          // A slow page leaves requests queued in the service when a round ends; this request is answered
          // after them, so the next round (and the next scenario) starts on an idle service.
          settle: async () =>
            void (
              await fetch(`${catalogue.origin}${first(sort)}`, { headers: catalogue.auth })
            ).arrayBuffer(),
        });
        const top = await bench.measure(`listings ${sort}, page 1`, target(first(sort)));
        const down = await bench.measure(`listings ${sort}, page ${DEPTH + 1}`, target(deep));
        failures += top.non2xx + top.errors + down.non2xx + down.errors;
        // A page answered too slowly to complete within a round has no ratio, and no cost to judge by.
        costs[sort] = top.rps > 0 && down.rps > 0 ? top.ratio / down.ratio : NaN;
        parts.push(
          `${sort}: ${costs[sort]!.toFixed(2)}× (page 1 ${top.rps.toFixed(0)} req/s, ratio ${top.ratio.toFixed(2)}, ` +
            `p99 ${top.p99.toFixed(0)} ms; page ${DEPTH + 1} ${down.rps.toFixed(0)} req/s, ratio ` +
            `${down.ratio.toFixed(2)}, p99 ${down.p99.toFixed(0)} ms)`,
        );
      }
      const cost = Object.values(costs).some(Number.isNaN) ? NaN : Math.max(...Object.values(costs));
      return {
        row: { value: `${cost.toFixed(2)}×`, note: parts.join('; ') },
        metrics: { cost },
        failures,
      };
    } finally {
      await terminate(baseline);
    }
  },
});
