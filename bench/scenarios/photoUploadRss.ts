/**
 * What one upload of the worst accepted shapes costs in memory: a service of its own (SQLite), one upload
 * at a time, and for each the kernel's peak resident set (VmHWM, reset before each upload through
 * /proc/<pid>/clear_refs) above the resident set just before it. The shapes are the largest the limits let
 * through (50 megapixels square, 16,384 × 3,051, strips one pixel high or wide) in each format, plus the
 * dearest variants (alpha, 16 bits a sample, an EXIF orientation that turns the image). Their bodies are one
 * flat colour, so they stay far below 10 MiB: decoding costs what the dimensions say, whatever the bytes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { terminate, type Server } from '../../support/processes.js';
import { defineScenario } from '../lib/scenario.js';
import { createKey } from '../lib/service.js';

interface Shape {
  label: string;
  width: number;
  height: number;
  format: 'png' | 'jpeg' | 'webp';
  channels?: 3 | 4;
  depth16?: boolean;
  orientation?: number;
}

const SHAPES: Shape[] = [
  { label: '7071×7071 PNG', width: 7071, height: 7071, format: 'png' },
  {
    label: '7071×7071 PNG RGBA 16-bit, orientation 6',
    width: 7071,
    height: 7071,
    format: 'png',
    channels: 4,
    depth16: true,
    orientation: 6,
  },
  { label: '7071×7071 JPEG', width: 7071, height: 7071, format: 'jpeg' },
  { label: '7071×7071 WebP', width: 7071, height: 7071, format: 'webp' },
  { label: '16384×3051 PNG', width: 16_384, height: 3051, format: 'png' },
  { label: '16384×3051 JPEG, orientation 6', width: 16_384, height: 3051, format: 'jpeg', orientation: 6 },
  { label: '16383×3051 WebP', width: 16_383, height: 3051, format: 'webp' },
  { label: '16384×1 PNG', width: 16_384, height: 1, format: 'png' },
  { label: '1×16384 PNG', width: 1, height: 16_384, format: 'png' },
  { label: '16383×1 WebP', width: 16_383, height: 1, format: 'webp' },
];
/** The target: one upload's peak above idle. */
const BUDGET_MB = 256;

async function imageOf(shape: Shape): Promise<Buffer> {
  const channels = shape.channels ?? 3;
  let image = sharp({
    create: {
      width: shape.width,
      height: shape.height,
      channels,
      background: { r: 90, g: 140, b: 200, alpha: 0.5 },
    },
    limitInputPixels: false,
  });
  if (shape.depth16) image = image.toColourspace('rgb16');
  if (shape.orientation) image = image.withMetadata({ orientation: shape.orientation });
  return image[shape.format]().toBuffer();
}

function status(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(Vm\w+):\s+(\d+) kB/.exec(line);
    if (m) out[m[1]!] = Number(m[2]) / 1024;
  }
  return out;
}

interface State {
  dir: string;
  server: Server;
  key: string;
}

export default defineScenario<State>({
  name: 'photoUploadRss',
  label: 'memory: peak RSS above idle of one upload of the worst accepted shapes',
  order: 360,
  tags: ['memory', 'photos'],
  usesSqlite: false,
  ownClient: 'none',
  target: { bounds: [{ metric: 'peakAboveIdleMb', atMost: BUDGET_MB }] },
  async setup(ctx) {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-photos-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'photos.db')}`, LOG_LEVEL: 'info', NODE_OPTIONS: '' };
    const key = await createKey(env, 'bench');
    const server = await ctx.serve('service (photo uploads)', 'service-photos', env);
    return { dir, server, key };
  },
  async measure(ctx, { server, key }) {
    const pid = server.child.pid!;
    const auth = { authorization: `Bearer ${key}` };
    const post = async (url: string, body: Buffer | string, type: string) => {
      const res = await fetch(`${server.origin}${url}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': type },
        body: typeof body === 'string' ? body : new Uint8Array(body),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const figures: Record<string, number> = {};
    let worst = 0;
    let worstLabel = '';
    let failures = 0;
    // One upload first, so sharp and libvips are loaded and their pools warm: idle is the service after that.
    const petOf = async () =>
      (await post('/v1/pets', JSON.stringify({ name: 'Wide', categoryId: 1 }), 'application/json')).json
        .id as number;
    const small = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#888' } })
      .jpeg()
      .toBuffer();
    const warm = await post(`/v1/pets/${await petOf()}/photos`, small, 'image/jpeg');
    if (warm.status !== 201) failures++;
    for (const shape of SHAPES) {
      const body = await imageOf(shape);
      const petId = await petOf();
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
      const idle = status(pid).VmRSS!;
      const started = performance.now();
      const res = await post(`/v1/pets/${petId}/photos`, body, `image/${shape.format}`);
      const ms = performance.now() - started;
      const above = status(pid).VmHWM! - idle;
      if (res.status !== 201) failures++;
      figures[shape.label] = Math.round(above);
      if (above > worst) [worst, worstLabel] = [above, shape.label];
      ctx.log(
        `${shape.label} (${(body.length / 1024).toFixed(0)} KiB): ${res.status}, ${ms.toFixed(0)} ms, ` +
          `peak ${above.toFixed(0)} MB above idle (${idle.toFixed(0)} MB)`,
      );
    }
    return {
      row: {
        value: `${worst.toFixed(0)} MB`,
        note: `worst: ${worstLabel}; ${SHAPES.length} shapes, one at a time`,
      },
      metrics: { peakAboveIdleMb: worst },
      failures,
      memory: { peakAboveIdleMb: figures },
    };
  },
  async teardown({ dir, server }) {
    await terminate(server);
    rmSync(dir, { recursive: true, force: true });
  },
});
