/**
 * The catalogue the listing and photo scenarios share: 100,000 pets, each with a profile and a location
 * around one of a country's cities (`pet-adoption seed`), and a photo for every fifth pet, written in bulk
 * through the photos' own repository (one rendering reused: the image work is not what these rows measure).
 * The SQLite service is started once per run and ended with the run; PostgreSQL's is set up and dropped by
 * its one scenario. Each row is measured against a bare server replaying one of this service's own
 * responses, byte for byte, so a ratio compares the same bytes on the wire.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { withDatabase } from '../../src/cli/common.js';
import { loadConfig } from '../../src/config.js';
import { secretStore } from '../../src/db/secrets.js';
import { Cursors } from '../../src/http/cursors.js';
import {
  decodeListingCursor,
  encodeListingCursor,
  parseListingQuery,
} from '../../src/modules/listings/query.js';
import { processUpload } from '../../src/modules/photos/image.js';
import { photoRepository } from '../../src/modules/photos/repository.js';
import { MAX_PHOTOS } from '../../src/modules/photos/schemas.js';
import { terminate, type Server } from '../../support/processes.js';
import { Interleaved, type Measured } from './load.js';
import type { Context, Outcome } from './scenario.js';
import { fromMeasured } from './scenario.js';
import { createKey, recordResponse, scriptArgv, seed } from './service.js';

export const CATALOGUE_PETS = 100_000;
/** Every fifth pet has a photo (20 %). */
export const PHOTO_EVERY = 5;
/** Berlin: one of the seed's cities, with its share (about a twelfth) of the pets around it. */
export const NEAR = '52.52,13.405';

export interface Catalogue {
  server: Server;
  pid: number;
  origin: string;
  env: Record<string, string>;
  key: string;
  auth: { authorization: string };
  /** Ids of some of the photos added. */
  photoIds: string[];
}

/** A photo for every PHOTO_EVERY-th pet, straight through the repository in batches. */
async function addPhotos(env: Record<string, string>, log: (line: string) => void): Promise<string[]> {
  const started = Date.now();
  const original = await sharp({
    create: { width: 800, height: 600, channels: 3, background: { r: 200, g: 120, b: 60 } },
  })
    .jpeg()
    .toBuffer();
  const processed = await processUpload(original, 'image/jpeg');
  const ids: string[] = [];
  await withDatabase(loadConfig({ ...env }), async (database) => {
    const photos = database.repository(photoRepository);
    const now = Date.now();
    const petIds = Array.from({ length: CATALOGUE_PETS / PHOTO_EVERY }, (_, i) => 1 + i * PHOTO_EVERY);
    for (let i = 0; i < petIds.length; i += 50) {
      const added = await Promise.all(
        petIds.slice(i, i + 50).map(async (petId) => {
          const id = randomBytes(16).toString('base64url');
          const result = await photos.add({
            id,
            petId,
            width: processed.width,
            height: processed.height,
            original: processed.original,
            files: processed.files,
            now,
            max: MAX_PHOTOS,
          });
          if (result.kind !== 'added') throw new Error(`photo for pet ${petId}: ${result.kind}`);
          return id;
        }),
      );
      if (ids.length < 1000) ids.push(...added);
    }
  });
  log(
    `catalogue: added ${CATALOGUE_PETS / PHOTO_EVERY} photos in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return ids;
}

/** Seeds a database (already named by `env`), adds the photos and starts the service on it. */
export async function startCatalogue(
  ctx: Context,
  name: string,
  env: Record<string, string>,
): Promise<Catalogue> {
  const started = Date.now();
  const key = await createKey(env, 'bench');
  await seed(env, CATALOGUE_PETS);
  ctx.log(
    `catalogue (${name}): seeded ${CATALOGUE_PETS} pets with profiles in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  const photoIds = await addPhotos(env, ctx.log);
  const server = await ctx.serve(`service (${name})`, name, env);
  return {
    server,
    pid: server.child.pid!,
    origin: server.origin,
    env,
    key,
    auth: { authorization: `Bearer ${key}` },
    photoIds,
  };
}

/** Directories removed when the run exits, by one listener (one per directory passed Node's listener warning). */
const temporaryDirs: string[] = [];

function temporaryDir(prefix: string): string {
  if (temporaryDirs.length === 0) {
    process.once('exit', () => {
      for (const dir of temporaryDirs) rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporaryDirs.push(dir);
  return dir;
}

let sqlite: Promise<Catalogue> | undefined;

/** The SQLite catalogue, set up on first use and ended with the run (the runner ends its children). */
export function sqliteCatalogue(ctx: Context): Promise<Catalogue> {
  if (!sqlite) {
    const dir = temporaryDir('pet-adoption-catalogue-');
    sqlite = startCatalogue(ctx, 'service-catalogue', {
      DATABASE_URL: `sqlite:${join(dir, 'catalogue.db')}`,
      LOG_LEVEL: 'info',
      NODE_OPTIONS: '',
    });
  }
  return sqlite;
}

/** A bare node:http server replaying one real response of `url` byte for byte. */
export async function sameBytesBaseline(ctx: Context, catalogue: Catalogue, url: string): Promise<Server> {
  const dir = temporaryDir('pet-adoption-recorded-');
  const file = join(dir, 'recorded.json');
  writeFileSync(file, JSON.stringify(await recordResponse(url, catalogue.key)));
  return ctx.serve('baseline (same bytes)', 'baseline', {}, scriptArgv('baseline-server.ts', file));
}

/** Measures `path` on the catalogue against a bare server replaying its own response. */
export async function measureSameBytes(
  ctx: Context,
  catalogue: Catalogue,
  label: string,
  path: string,
): Promise<{ outcome: Outcome; measured: Measured }> {
  const baseline = await sameBytesBaseline(ctx, catalogue, `${catalogue.origin}${path}`);
  try {
    const own = new Interleaved(
      { pid: baseline.child.pid!, url: `${baseline.origin}${path}` },
      ctx.settings,
      ctx.log,
    );
    const measured = await own.measure(label, {
      pid: catalogue.pid,
      url: `${catalogue.origin}${path}`,
      headers: catalogue.auth,
    });
    const outcome = fromMeasured(measured);
    const b = own.summary();
    const note = `own baseline ${b.rps.toFixed(0)} req/s`;
    outcome.row.note = outcome.row.note ? `${outcome.row.note}; ${note}` : note;
    return { outcome, measured };
  } finally {
    await terminate(baseline);
  }
}

/** Follows `rel="next"` from `path` `pages` times; the path (with the cursor) of the page reached. */
export async function pathAfter(catalogue: Catalogue, path: string, pages: number): Promise<string> {
  let url = `${catalogue.origin}${path}`;
  for (let i = 0; i < pages; i++) {
    const res = await fetch(url, { headers: catalogue.auth });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
    const next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    if (!next) throw new Error(`the pages of ${path} end after ${i + 1}`);
    url = new URL(next, url).href;
  }
  const reached = new URL(url);
  return reached.pathname + reached.search;
}

/**
 * `count` spellings of the search page at `path` that the service answers with the same bytes but keeps
 * apart in its page cache: each carries a cursor of its own that leaves out nothing of that page (page 1:
 * after an id past the catalogue's, or after distance 0; a deeper page: its cursor with another span, the
 * hint of how far the first ring reaches, changed by micrometres). Measuring them is measuring the search
 * itself, each request a cache miss.
 */
export function uncachedPaths(path: string, count: number, cursors: Cursors): string[] {
  const given = /[?&]cursor=([\w.-]+)/.exec(path)?.[1];
  const bare = path.replace(/&cursor=[\w.-]+/, '');
  const query = parseListingQuery(Object.fromEntries(new URL(bare, 'http://bench').searchParams), cursors);
  const after = given === undefined ? undefined : decodeListingCursor(cursors, query, given);
  return Array.from({ length: count }, (_, i) => {
    let cursor: string;
    if (after) {
      if (query.sort !== 'distance') throw new Error(`${path}: a deep page needs a distance cursor`);
      cursor = encodeListingCursor(cursors, query, { ...after, span: after.span! + (i + 1) * 1e-9 });
    } else if (query.sort === 'newest') {
      cursor = encodeListingCursor(cursors, query, { id: CATALOGUE_PETS + 1 + i });
    } else if (query.sort === 'distance') {
      cursor = encodeListingCursor(cursors, query, { id: 1 + i, distance: 0, span: 0 });
    } else throw new Error(`${path}: no uncached spelling for sort ${query.sort}`);
    return `${bare}&cursor=${cursor}`;
  });
}

/** The cursors the service over `catalogue` issues (its CURSOR_SECRET, else its database's secret). */
async function catalogueCursors(catalogue: Catalogue): Promise<Cursors> {
  const config = loadConfig({ ...catalogue.env });
  const secret =
    config.cursorSecret ??
    (await withDatabase(config, (database) => database.repository(secretStore).get('cursor')));
  return new Cursors(secret);
}

/**
 * The search at `path` answered without the page cache (uncachedPaths: 4,000 spellings, 80 per connection,
 * four times what the cache keeps, so none is still kept when its connection asks again), against a bare
 * server replaying that page's bytes.
 */
export async function measureUncached(
  ctx: Context,
  catalogue: Catalogue,
  label: string,
  path: string,
): Promise<Outcome> {
  const baseline = await sameBytesBaseline(ctx, catalogue, `${catalogue.origin}${path}`);
  try {
    const own = new Interleaved(
      { pid: baseline.child.pid!, url: `${baseline.origin}${path}` },
      ctx.settings,
      ctx.log,
    );
    const paths = uncachedPaths(path, 4000, await catalogueCursors(catalogue));
    const connections = ctx.settings.connections;
    const perClient = Array.from({ length: connections }, (_, c) =>
      paths
        .filter((_, i) => i % connections === c)
        .map((p) => ({ method: 'GET' as const, path: p, headers: catalogue.auth })),
    );
    const outcome = fromMeasured(
      await own.measure(label, { pid: catalogue.pid, url: catalogue.origin, perClientRequests: perClient }),
    );
    const note = `each request a page-cache miss; own baseline ${own.summary().rps.toFixed(0)} req/s`;
    outcome.row.note = outcome.row.note ? `${outcome.row.note}; ${note}` : note;
    return outcome;
  } finally {
    await terminate(baseline);
  }
}
