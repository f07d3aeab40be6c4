/**
 * Serialized list pages (and single pets: getPet), remembered per instance and answered without the
 * database query, the serialization or the ETag hash. The cache is exact, not a TTL: every page is labelled
 * with the version of the data it was read from, and is answered only while the database's current version
 * is that label.
 *
 * The version comes from the repository (`readVersion`), which promises that:
 * - it never labels a page with a version newer than the data the page was read from (so a label is read
 *   before, or in the same snapshot as, the page), and
 * - a request sees a version at least as new as every write that answered before the request arrived, on
 *   any instance (SQLite: `data_version` and this connection's `total_changes()`; PostgreSQL: the
 *   `read_versions` counters bumped by a trigger in every writing transaction; both read with the key
 *   lookups of the request's turn, after it arrived).
 * An answer from the cache is then never older than what a fresh query at the request's arrival would give.
 *
 * Why by hand: the ecosystem's response caches (@fastify/caching, async-cache-dedupe) expire by time or by
 * explicit invalidation calls in every write path; neither can be exact across instances without the version
 * check, which is the whole of what is needed here besides a bounded Map.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { notModified } from './conditional.js';

export interface SerializedPage {
  body: Buffer;
  /** The weak ETag of the body bytes. */
  etag: string;
  /** The `Link: rel="next"` value when another page exists. */
  link: string | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Builds a page as Fastify would send it: serialized by the route's own 200 response schema
 * (fast-json-stringify, `reply.serialize`), with its ETag and the Link header `sendPage` set.
 */
export function serializePage(reply: FastifyReply, rows: unknown[]): SerializedPage {
  const body = Buffer.from(reply.serialize(rows) as string);
  const etag = `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const link = reply.getHeader('link');
  return { body, etag, link: typeof link === 'string' ? link : undefined };
}

/** Answers a serialized page (or `304` when `If-None-Match` matches), bytes as they are. */
export function sendSerializedPage(
  request: FastifyRequest,
  reply: FastifyReply,
  page: SerializedPage,
): FastifyReply {
  if (page.link !== undefined) reply.header('link', page.link);
  if (notModified(request, reply, page.etag)) return reply;
  // With a JSON content type set, Fastify sends a Buffer as it is, without serializing again.
  return reply.header('content-type', JSON_TYPE).send(page.body);
}

/** `Page`: what a page is kept as (a route without ETags keeps its bytes and Link alone). */
export class PageCache<Page = SerializedPage> {
  private version: string | undefined;
  private readonly pages = new Map<string, Page>();
  /** Reads under way, labelled like pages: `loadingVersion` is the version they were started at. */
  private loadingVersion: string | undefined;
  private readonly loading = new Map<string, Promise<Page>>();

  /** @param maxPages bounds memory: a page of 100 pets is ~7 KB. */
  constructor(private readonly maxPages = 1_000) {}

  /** The page for `key` if it was read at exactly `version`. */
  get(version: string | undefined, key: string): Page | undefined {
    return version !== undefined && version === this.version ? this.pages.get(key) : undefined;
  }

  /**
   * The page for `key` at `version` when `get` has none: the read of it already under way at that version,
   * or `read()` started now and remembered once it answers. Every request of a turn checks the cache before
   * any of them has read the page (the reads are batched at the turn's end), so without this each one
   * read and serialized the same page: measured, every list in a mixed read/write flood missed the cache.
   * Sharing a read under way is as exact as answering a finished one: both are labelled with the version
   * read before the page, and are only given to requests that observed that same version.
   * A read that fails fails every request that waited on it, as it would have failed each of them.
   */
  load(version: string | undefined, key: string, read: () => Promise<Page>): Promise<Page> {
    if (version === undefined) return read();
    if (version !== this.loadingVersion) {
      this.loading.clear();
      this.loadingVersion = version;
    }
    const underWay = this.loading.get(key);
    if (underWay !== undefined) return underWay;
    const loaded = read().then(
      (page) => {
        this.forget(version, key, loaded);
        this.set(version, key, page);
        return page;
      },
      (error: unknown) => {
        this.forget(version, key, loaded);
        throw error;
      },
    );
    this.loading.set(key, loaded);
    return loaded;
  }

  /**
   * Drops every kept page when `version` is not the one they were read at. A route whose pages hold personal
   * data calls it before `get`: the version an instance observes only moves forward, so those pages would
   * never be answered again, and their bytes (an erased applicant's name, say) should not stay in memory
   * until the next page is kept.
   */
  sweep(version: string | undefined): void {
    if (version !== this.version && this.pages.size > 0) this.pages.clear();
  }

  private forget(version: string, key: string, loaded: Promise<Page>): void {
    if (version === this.loadingVersion && this.loading.get(key) === loaded) this.loading.delete(key);
  }

  /**
   * Remembers a page read at `version`. A different version than the cache's drops every other page (they
   * can no longer be answered once the version moves on; an older label only costs later misses).
   */
  set(version: string | undefined, key: string, page: Page): void {
    if (version === undefined) return;
    if (version !== this.version) {
      this.pages.clear();
      this.version = version;
    }
    if (this.pages.size >= this.maxPages) this.pages.delete(this.pages.keys().next().value!);
    this.pages.set(key, page);
  }
}
