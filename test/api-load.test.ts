/**
 * The API-load signal the webhook dispatcher yields to (src/http/api-load.ts): busy only while the event
 * loop is saturated AND requests arrive fast; either alone is not load from the API. The loop is saturated
 * for real (synchronous work between samples) and the test waits on the samples themselves, not on time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BUSY_REQUESTS_PER_S, watchApiLoad } from '../src/http/api-load.js';

const INTERVAL_MS = 20;
const IDLE_INTERVAL_MS = 100;

/** Blocks the loop for most of each interval, then lets the sampler run; resolves with `samples` verdicts. */
async function sampleWhileSaturated(admitted: () => number, samples: number): Promise<boolean[]> {
  const verdicts: boolean[] = [];
  const load = watchApiLoad(admitted, { intervalMs: INTERVAL_MS, onSample: (busy) => verdicts.push(busy) });
  try {
    while (verdicts.length < samples) {
      const until = performance.now() + INTERVAL_MS;
      while (performance.now() < until) {
        // Saturate the loop: this is the API's work as the sampler sees it.
      }
      // Timers run before immediates: a due sample has been taken when this resolves.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    load.stop();
  }
  return verdicts;
}

test('a saturated loop with requests arriving fast is busy', async () => {
  let count = 0;
  // Far above BUSY_REQUESTS_PER_S whatever the interval: each look counts a second's worth.
  const verdicts = await sampleWhileSaturated(() => (count += BUSY_REQUESTS_PER_S), 4);
  // The first sample may straddle the loop's idle start; the saturated ones after it are busy.
  assert.deepEqual(verdicts.slice(1), [true, true, true]);
});

test('a saturated loop without requests (background work alone) is not busy', async () => {
  const verdicts = await sampleWhileSaturated(() => 0, 4);
  assert.deepEqual(verdicts, [false, false, false, false]);
});

test('requests arriving fast on an idle loop are not busy', async () => {
  let count = 0;
  const verdicts: boolean[] = [];
  await new Promise<void>((resolve) => {
    // The sampler's timer is unref'd (it must not hold a server open); this keeps the test alive meanwhile.
    const keepAlive = setInterval(() => undefined, 1_000);
    // Longer intervals than the saturated tests': on a shared machine a process descheduled while it runs a
    // timer counts as busy, and 20 ms is short enough for that alone to cross the threshold.
    const load = watchApiLoad(() => (count += BUSY_REQUESTS_PER_S), {
      intervalMs: IDLE_INTERVAL_MS,
      onSample: (busy) => {
        verdicts.push(busy);
        if (verdicts.length < 4) return;
        load.stop();
        clearInterval(keepAlive);
        resolve();
      },
    });
  });
  // The first sample may hold the end of the test before (its loop was saturated); the idle ones after it
  // are not busy.
  assert.deepEqual(verdicts.slice(1), [false, false, false]);
});
