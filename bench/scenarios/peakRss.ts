/** The shared SQLite service's peak resident set (the kernel's VmHWM) over everything measured before it. */
import { defineScenario } from '../lib/scenario.js';

export default defineScenario({
  name: 'peakRss',
  label: 'memory: peak RSS of the service over the run',
  // After every other scenario on the shared service, so the peak covers them all.
  order: 190,
  tags: ['memory'],
  usesSqlite: true,
  ownClient: 'none',
  target: { bounds: [{ metric: 'peakRssMb', atMost: 200 }] },
  setup: (ctx) => ctx.sqlite(),
  measure(_ctx, service) {
    const peakMb = service.memory.peakMb();
    // One RSS sample per second over the whole run, for looking at the shape (GC sawtooth or growth).
    const t0 = service.memory.samples[0]?.t ?? 0;
    const perSecond = new Map<number, number>();
    for (const sample of service.memory.samples)
      perSecond.set(Math.floor((sample.t - t0) / 1000), sample.rssKb);
    return Promise.resolve({
      row: { value: `${peakMb.toFixed(0)} MB` },
      metrics: { peakRssMb: peakMb },
      failures: 0,
      memory: { peakMb, rssMbPerSecond: [...perSecond.values()].map((kb) => Math.round(kb / 102.4) / 10) },
    });
  },
});
