/**
 * A photo's medium rendering, served without a key, against a bare server sending the same bytes (status,
 * headers and body). The requests cycle through 1,000 photos of the catalogue.
 */
import { terminate } from '../../support/processes.js';
import { sameBytesBaseline, sqliteCatalogue } from '../lib/catalogue.js';
import { Interleaved } from '../lib/load.js';
import { defineScenario, fromMeasured } from '../lib/scenario.js';

export default defineScenario({
  name: 'photoMedium',
  label: 'GET /v1/photos/{id}/medium.webp (1,000 photos) ÷ bare node:http, same bytes',
  order: 330,
  tags: ['catalogue'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.5 }] },
  setup: (ctx) => sqliteCatalogue(ctx),
  async measure(ctx, catalogue) {
    const path = (id: string) => `/v1/photos/${id}/medium.webp`;
    const baseline = await sameBytesBaseline(
      ctx,
      catalogue,
      `${catalogue.origin}${path(catalogue.photoIds[0]!)}`,
    );
    try {
      const own = new Interleaved(
        { pid: baseline.child.pid!, url: `${baseline.origin}${path(catalogue.photoIds[0]!)}` },
        ctx.settings,
        ctx.log,
      );
      const outcome = fromMeasured(
        await own.measure('photo medium.webp', {
          pid: catalogue.pid,
          url: catalogue.origin,
          requests: catalogue.photoIds.map((id) => ({ method: 'GET' as const, path: path(id) })),
        }),
      );
      const b = own.summary();
      const note = `own baseline ${b.rps.toFixed(0)} req/s`;
      outcome.row.note = outcome.row.note ? `${outcome.row.note}; ${note}` : note;
      return outcome;
    } finally {
      await terminate(baseline);
    }
  },
});
