/**
 * listPets while 2-megapixel JPEGs are uploaded at a steady rate, against listPets alone: both measured
 * against the same bare server replaying the list's bytes, in the same run. The uploads run through the
 * whole measurement (scenario and baseline rounds: the machine is as busy during both); each goes to a
 * pet of its own. The row judges (ratio with uploads) ÷ (ratio without) and reports uploads/s and an
 * upload's p99.
 */
import sharp from 'sharp';
import { terminate } from '../../support/processes.js';
import { CATALOGUE_PETS, PHOTO_EVERY, sameBytesBaseline, sqliteCatalogue } from '../lib/catalogue.js';
import { Interleaved, median, type Measured } from '../lib/load.js';
import { defineScenario } from '../lib/scenario.js';

const PATH = '/v1/pets?limit=20';
/** A rate the service keeps up with on two shared cores: faster, uploads queue and their latency is the queue's. */
const UPLOADS_PER_SECOND = 1;
/** 1632 × 1224: 2.0 megapixels, a phone photo scaled down. */
const WIDTH = 1632;
const HEIGHT = 1224;

export default defineScenario({
  name: 'uploads',
  label: `GET ${PATH} while ${UPLOADS_PER_SECOND} 2-megapixel JPEG/s is uploaded ÷ without uploads`,
  order: 350,
  tags: ['catalogue'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'kept', atLeast: 0.7 }] },
  setup: (ctx) => sqliteCatalogue(ctx),
  async measure(ctx, catalogue) {
    const jpeg = await sharp({
      create: {
        width: WIDTH,
        height: HEIGHT,
        channels: 3,
        background: { r: 90, g: 140, b: 200 },
        noise: { type: 'gaussian', mean: 110, sigma: 25 },
      },
    })
      .jpeg({ quality: 85 })
      .toBuffer();
    const baseline = await sameBytesBaseline(ctx, catalogue, `${catalogue.origin}${PATH}`);
    try {
      const bench = new Interleaved(
        { pid: baseline.child.pid!, url: `${baseline.origin}${PATH}` },
        ctx.settings,
        ctx.log,
      );
      const target = { pid: catalogue.pid, url: `${catalogue.origin}${PATH}`, headers: catalogue.auth };
      const alone = await bench.measure('listPets without uploads', target);

      // Pets without photos (not multiples of PHOTO_EVERY, counted from 1), one upload each.
      let next = 2;
      const latencies: number[] = [];
      let failed = 0;
      const inFlight = new Set<Promise<void>>();
      const upload = async (petId: number): Promise<void> => {
        const started = performance.now();
        const res = await fetch(`${catalogue.origin}/v1/pets/${petId}/photos`, {
          method: 'POST',
          headers: { ...catalogue.auth, 'content-type': 'image/jpeg' },
          body: new Uint8Array(jpeg),
        });
        await res.arrayBuffer();
        if (res.status === 201) latencies.push(performance.now() - started);
        else failed++;
      };
      const started = performance.now();
      const timer = setInterval(() => {
        if ((next - 1) % PHOTO_EVERY === 0) next++;
        if (next > CATALOGUE_PETS) return;
        const done = upload(next++).catch(() => void failed++);
        inFlight.add(done);
        void done.finally(() => inFlight.delete(done));
      }, 1000 / UPLOADS_PER_SECOND);
      let busy: Measured;
      try {
        busy = await bench.measure('listPets with uploads', target);
      } finally {
        clearInterval(timer);
        await Promise.all(inFlight);
      }
      const seconds = (performance.now() - started) / 1000;
      latencies.sort((a, b) => a - b);
      const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? NaN;
      const kept = busy.ratio / alone.ratio;
      ctx.log(
        `uploads: ${latencies.length} in ${seconds.toFixed(0)} s, p50 ${median(latencies).toFixed(0)} ms, ` +
          `p99 ${p99.toFixed(0)} ms, ${failed} failed; list ratio ${alone.ratio.toFixed(2)} → ${busy.ratio.toFixed(2)}`,
      );
      return {
        row: {
          value: `${kept.toFixed(2)}×`,
          p99: busy.p99,
          note:
            `list ratio ${alone.ratio.toFixed(2)} alone, ${busy.ratio.toFixed(2)} with uploads ` +
            `(${alone.rps.toFixed(0)} → ${busy.rps.toFixed(0)} req/s); ${(latencies.length / seconds).toFixed(1)} ` +
            `uploads/s (${(jpeg.length / 1024).toFixed(0)} KiB each), upload p99 ${p99.toFixed(0)} ms` +
            (failed ? `, ${failed} failed` : ''),
        },
        metrics: { kept, uploadsPerSecond: latencies.length / seconds, uploadP99: p99 },
        failures: failed + alone.non2xx + alone.errors + busy.non2xx + busy.errors,
      };
    } finally {
      await terminate(baseline);
    }
  },
});
