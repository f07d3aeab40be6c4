/** What depth costs: the first page's ratio over the deep page's (both to the same baseline). */
import { defineScenario } from '../lib/scenario.js';
import { SQLITE_PETS } from '../lib/service.js';
import { DEEP_AFTER_ID } from './deepPage.js';

export default defineScenario({
  name: 'depth',
  label: `depth: cost of the page ${DEEP_AFTER_ID.toLocaleString('en')} rows deep ÷ first page`,
  order: 30,
  usesSqlite: true,
  target: {
    bounds: [{ metric: 'cost', atMost: 1.5 }],
    context: `${SQLITE_PETS.toLocaleString('en')} pets`,
  },
  setup: () => Promise.resolve(undefined),
  async measure(ctx) {
    const first = (await ctx.outcome('list')).measured!;
    const deep = (await ctx.outcome('deepPage')).measured!;
    const cost = first.ratio / deep.ratio;
    return {
      row: {
        value: `${cost.toFixed(2)}×`,
        note:
          `ratio to baseline first ${first.ratio.toFixed(2)} vs deep ${deep.ratio.toFixed(2)}; ` +
          `p50 latency ×${(deep.p50 / first.p50).toFixed(2)}`,
      },
      metrics: { cost },
      failures: 0,
    };
  },
});
