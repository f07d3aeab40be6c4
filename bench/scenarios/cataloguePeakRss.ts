/**
 * The SQLite catalogue service's peak resident set (the kernel's VmHWM) over every catalogue scenario
 * before it: searches, their page cache, the renderings kept in memory and the uploads.
 */
import { sqliteCatalogue } from '../lib/catalogue.js';
import { MemoryWatch } from '../lib/memory.js';
import { defineScenario } from '../lib/scenario.js';

export default defineScenario({
  name: 'cataloguePeakRss',
  label: 'memory: peak RSS of the catalogue service (SQLite) over the catalogue scenarios',
  // After every other scenario on the catalogue service, so the peak covers them all.
  order: 360,
  tags: ['catalogue', 'memory'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'peakRssMb', atMost: 300 }] },
  setup: (ctx) => sqliteCatalogue(ctx),
  measure(_ctx, catalogue) {
    const watch = new MemoryWatch(catalogue.pid);
    const peakMb = watch.peakMb();
    watch.stop();
    return Promise.resolve({
      row: { value: `${peakMb.toFixed(0)} MB` },
      metrics: { peakRssMb: peakMb },
      failures: 0,
      memory: { cataloguePeakMb: peakMb },
    });
  },
});
