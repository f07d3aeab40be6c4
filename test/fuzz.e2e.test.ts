/**
 * End to end, as an attacker: the built server (`node dist/cli.js serve`) on a real socket, some data made
 * through the API, a real cursor of every list (support/lists.ts), then mutated cursors of every list and a
 * handful of odd images (huge declared dimensions in a tiny PNG, a truncated PNG, wrong content types),
 * while a probe in a worker thread asks `/healthz` over and over: every probe answers within 100 ms
 * throughout, no attack answers a 5xx other than a 503 with Retry-After, and the server answers afterwards.
 * Bounded: a fixed number of mutations per list (seeded like the other fuzz suites), a few at a time.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import sharp from 'sharp';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { webhookRepository } from '../src/modules/webhooks/repository.js';
import {
  CLI,
  cli,
  environmentFor,
  killAll,
  serve,
  type Environment,
  type Server,
} from '../support/processes.js';
import { backends } from './helpers.js';
import { SEED } from './support/fuzz.js';
import { mutatedCursor, seedLists, withCursor, type Answer } from './support/lists.js';

/**
 * The promise: the liveness probe answers within 100 ms, whatever else arrives. FUZZ_PROBE_MS raises it on a
 * machine whose cores are shared so widely that the scheduler alone delays answers (the figures printed
 * say what /healthz took before and during the attacks).
 */
const PROBE_MS = Number(process.env.FUZZ_PROBE_MS ?? 100);
const MUTATIONS_PER_LIST = 25;
const CONCURRENCY = 2;

/**
 * A probe on a thread of its own, so this process's own work never delays its measurements. It reports
 * `ready` after its first BASELINE answers (the first, which opens the connection, not counted), and on
 * `stop` every answer since: when it was sent (ms since the epoch, comparable across threads), its status
 * and how long it took.
 */
const PROBE = `
const { parentPort, workerData } = require('node:worker_threads');
let stop = false;
parentPort.on('message', () => { stop = true; });
(async () => {
  const samples = [];
  let first = true;
  while (!stop && samples.length < 100000) {
    const at = performance.timeOrigin + performance.now();
    const started = performance.now();
    let status = 0;
    try {
      const res = await fetch(workerData.url, { signal: AbortSignal.timeout(10000) });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      status = -1;
    }
    if (first) { first = false; continue; }
    samples.push({ at, status, ms: performance.now() - started });
    if (samples.length === workerData.baseline) parentPort.postMessage({ ready: true });
  }
  parentPort.postMessage({ samples });
})();
`;
const BASELINE = 20;

interface Sample {
  at: number;
  status: number;
  ms: number;
}

function startProbe(url: string): { ready: Promise<void>; stop(): Promise<Sample[]> } {
  const worker = new Worker(PROBE, { eval: true, workerData: { url, baseline: BASELINE } });
  let onReady: () => void;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const done = new Promise<Sample[]>((resolve, reject) => {
    worker.on('message', (message: { ready?: boolean; samples?: Sample[] }) => {
      if (message.ready) onReady();
      if (message.samples) resolve(message.samples);
    });
    worker.once('error', reject);
  });
  return {
    ready,
    async stop() {
      worker.postMessage('stop');
      const samples = await done;
      await worker.terminate();
      return samples;
    },
  };
}

/** A PNG of chunks made by hand: signature, IHDR with the given size, an IDAT of `data`, IEND. */
function handmadePng(width: number, height: number, data: Buffer): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, body: Buffer) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length);
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), body]);
    const tail = Buffer.alloc(4);
    tail.writeUInt32BE(crc(typed));
    return Buffer.concat([head, typed, tail]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(data)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

async function oddImages(): Promise<{ name: string; type: string; body: Buffer }[]> {
  const small = await sharp({
    create: { width: 64, height: 48, channels: 3, background: { r: 10, g: 200, b: 90 } },
  })
    .png()
    .toBuffer();
  const wide = await sharp({ create: { width: 100_001, height: 1, channels: 3, background: '#808080' } })
    .png()
    .toBuffer();
  return [
    {
      name: 'declares 1,000,000 × 1,000,000 in 100 bytes',
      type: 'image/png',
      body: handmadePng(1e6, 1e6, Buffer.alloc(64)),
    },
    { name: 'declares 2^31-1 × 1', type: 'image/png', body: handmadePng(2 ** 31 - 1, 1, Buffer.alloc(64)) },
    { name: '100,001 × 1', type: 'image/png', body: wide },
    { name: 'truncated PNG', type: 'image/png', body: small.subarray(0, Math.floor(small.length / 2)) },
    { name: 'PNG bytes as JPEG', type: 'image/jpeg', body: small },
    { name: 'PNG bytes as GIF', type: 'image/gif', body: small },
    { name: 'PNG bytes as HTML', type: 'text/html', body: small },
    { name: 'no bytes', type: 'image/webp', body: Buffer.alloc(0) },
  ];
}

/** Runs `jobs` a few at a time. */
async function inBatches<T>(jobs: (() => Promise<T>)[], concurrency: number): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < jobs.length) results.push(await jobs[next++]!());
    }),
  );
  return results;
}

for (const backend of await backends()) {
  describe(`fuzzing the built server [${backend.name}]`, () => {
    let environment: Environment;
    let server: Server;
    let key: string;

    const send = async (method: string, path: string, body?: unknown, type?: string): Promise<Answer> => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      if (body !== undefined) headers['content-type'] = type ?? 'application/json';
      const res = await fetch(server.origin + path, {
        method,
        headers,
        body:
          body === undefined
            ? undefined
            : Buffer.isBuffer(body)
              ? new Uint8Array(body)
              : JSON.stringify(body),
      });
      return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
    };

    before(async () => {
      assert.ok(existsSync(CLI), `${CLI} is missing: run \`npm run build\` (npm test does)`);
      environment = await environmentFor(backend);
      const env = { ...environment.env, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' };
      assert.equal((await cli(['migrate'], env)).code, 0);
      const created = await cli(
        [
          'keys',
          'create',
          '--account',
          'fuzz',
          '--plan',
          'enterprise',
          '--per-minute',
          '100000000',
          '--per-day',
          '100000000',
        ],
        env,
      );
      assert.equal(created.code, 0, created.stderr);
      key = created.stdout.trim().split('\n').at(-1)!;
      server = await serve('fuzzed', env);
    });

    after(async () => {
      await killAll();
      await environment?.cleanup();
    });

    test('mutated cursors of every list and odd images: /healthz within 100 ms throughout, no 5xx', async (t) => {
      // Deliveries come from the dispatcher's fan-out; run it here too, so they exist when asked for.
      const database = await openDatabase(loadConfig({ ...environment.env }));
      let lists;
      try {
        lists = await seedLists(
          send,
          async () => {
            await database.repository(webhookRepository).fanOut(Date.now(), 1000);
          },
          // Refused at once: the dispatcher's attempts stay on this machine.
          'http://127.0.0.1:9/hook',
        );
      } finally {
        await database.close();
      }
      const others = lists.map((l) => l.cursor);
      const attacks: { label: string; run: () => Promise<Answer> }[] = [];
      lists.forEach((list, i) => {
        const mutated = fc.sample(mutatedCursor(list.cursor, others), {
          seed: SEED + i,
          numRuns: MUTATIONS_PER_LIST,
        });
        for (const cursor of mutated) {
          const url = withCursor(list.url, cursor);
          attacks.push({ label: `${list.name}: ${url.slice(0, 160)}`, run: () => send('GET', url) });
        }
      });
      const petId = JSON.parse((await send('POST', '/v1/pets', { name: 'Photogenic', categoryId: 1 })).body)
        .id as number;
      for (const image of await oddImages()) {
        attacks.push({
          label: `image ${image.name}`,
          run: () => send('POST', `/v1/pets/${petId}/photos`, image.body, image.type),
        });
      }

      const probe = startProbe(`${server.origin}/healthz`);
      await probe.ready;
      const attackFrom = performance.timeOrigin + performance.now();
      const answers = await inBatches(
        attacks.map((attack) => async () => ({ label: attack.label, res: await attack.run() })),
        CONCURRENCY,
      ).catch(async (error: unknown) => {
        await probe.stop();
        throw error;
      });
      const samples = await probe.stop();
      const statuses = new Map<number, number>();
      for (const { label, res } of answers) {
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        assert.ok(
          res.status < 500 || (res.status === 503 && res.headers['retry-after'] !== undefined),
          `${label}: ${res.status} ${res.body.slice(0, 200)}`,
        );
        if (!label.startsWith('image')) assert.equal(JSON.parse(res.body).code, 'invalid_cursor', label);
      }
      const baseline = samples.filter((s) => s.at < attackFrom);
      const during = samples.filter((s) => s.at >= attackFrom);
      const worst = (list: Sample[]) => Math.max(0, ...list.map((s) => s.ms));
      const bound = PROBE_MS;
      t.diagnostic(
        `${answers.length} attacks (${[...statuses].map(([s, n]) => `${s}×${n}`).join(', ')}); ` +
          `/healthz: ${baseline.length} probes before, slowest ${worst(baseline).toFixed(1)} ms; ` +
          `${during.length} during, slowest ${worst(during).toFixed(1)} ms; bound ${bound.toFixed(1)} ms`,
      );
      assert.ok(during.length >= 5, `the probe ran throughout (${during.length} answers)`);
      const late = during.filter((s) => s.status !== 200 || s.ms >= bound);
      assert.deepEqual(late, [], `every /healthz 200 within ${bound.toFixed(1)} ms`);

      // Still serving afterwards.
      assert.equal((await fetch(`${server.origin}/healthz`)).status, 200);
      assert.equal((await send('GET', '/v1/pets?limit=1')).status, 200);
      assert.equal(server.child.exitCode, null, 'the server is still running');
    });
  });
}
