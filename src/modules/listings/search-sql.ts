/** The search's SQL and its rings around a point, written once for both backends (each gives its Dialect). */
import { ringCover, type CoverRange, EARTH_RADIUS_KM } from './cover.js';
import type { ListingQuery } from './query.js';

const DEG = Math.PI / 180;

/** Slack added to the bounding box so rounding can never leave a pet inside the radius outside the box. */
const BOX_SLACK_DEG = 1e-6;

/** Great-circle distance (haversine) in km; the SQL of both backends computes the same formula. */
export function distanceKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const a =
    Math.sin(((lat2 - lat1) * DEG) / 2) ** 2 +
    Math.cos(lat1 * DEG) * Math.cos(lat2 * DEG) * Math.sin(((lon2 - lon1) * DEG) / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(a)));
}

/**
 * The smallest latitude/longitude box holding every point within `radiusKm` of the centre, widened by a
 * little slack; `lon` is undefined when the circle reaches a pole (every longitude), and a box crossing
 * the antimeridian is two longitude ranges.
 */
export function boundingBox(
  latitude: number,
  longitude: number,
  radiusKm: number,
): { lat: [number, number]; lon?: [number, number][] } {
  const angular = radiusKm / EARTH_RADIUS_KM;
  const dLat = angular / DEG + BOX_SLACK_DEG;
  const lat: [number, number] = [latitude - dLat, latitude + dLat];
  if (lat[0] <= -90 || lat[1] >= 90) return { lat };
  const dLon = Math.asin(Math.min(1, Math.sin(angular) / Math.cos(latitude * DEG))) / DEG + BOX_SLACK_DEG;
  const min = longitude - dLon;
  const max = longitude + dLon;
  if (dLon >= 180) return { lat };
  if (min < -180)
    return {
      lat,
      lon: [
        [min + 360, 180],
        [-180, max],
      ],
    };
  if (max > 180)
    return {
      lat,
      lon: [
        [min, 180],
        [-180, max - 360],
      ],
    };
  return { lat, lon: [[min, max]] };
}

export interface Dialect {
  /** The placeholder for the n-th value (1-based). */
  placeholder(n: number): string;
  /** A boolean as the backend stores it. */
  boolean(value: boolean): unknown;
  /** SQL for the distance in km from the value placeholders `lat`, `lon` to the profile's coordinates. */
  distance(lat: string, lon: string): string;
  /** SQL matching pets whose words contain every one of `words` (bound as one value). */
  words(placeholder: string): string;
  /** The value bound for `words`. */
  wordsValue(words: string[]): unknown;
  /**
   * The FROM clause's start reading profiles through the location index, range by range of `ranges`
   * (ringCover), as `pr`; `bind` binds a value and returns its placeholder.
   */
  cover(ranges: CoverRange[], bind: (value: unknown) => string): string;
  /**
   * Optional: the FROM clause's start reading the word index first, joined to pets as `p`, and the pet id
   * as the word index gives it (so a sort by id is the index's own order, read only as far as the page).
   */
  wordsFirst?(placeholder: string): { from: string; id: string };
}

/**
 * A ring of the search near a point: profiles are read through `ranges` alone, up to `outer` km. `index`
 * counts the rings of one page (0: the first).
 */
export interface Ring {
  ranges: CoverRange[];
  outer: number;
  index: number;
}

/**
 * The most rings (statements) a page sorted by distance reads, whatever its cursor says: the last one
 * reaches the radius. With the least width below and at least doubling, fewer are needed anyway.
 */
export const MAX_RINGS = 8;
/** The narrowest ring, as a part of the radius: a span of 1e-300 km must not make a ring of nothing. */
const MIN_RING_PART = 1 / 4096;

/**
 * The search as one statement: filters (the box included) inside, radius, cursor, order and limit outside.
 * With a `ring`, the profiles come from the location index's ranges instead of the box, and the distance
 * is bounded by the ring's outer edge (never past the radius).
 */
export function searchSql(
  query: ListingQuery,
  dialect: Dialect,
  ring?: Ring,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const bind = (value: unknown): string => {
    values.push(value);
    return dialect.placeholder(values.length);
  };
  const where: string[] = [];
  const inList = (column: string, items: readonly unknown[]) =>
    where.push(`${column} IN (${items.map((item) => bind(item)).join(', ')})`);

  // '?' placeholders bind in the order they appear: the distance (in the select list) first.
  const distance = query.near
    ? dialect.distance(bind(query.near.latitude), bind(query.near.longitude))
    : 'NULL';
  const from = ring ? dialect.cover(ring.ranges, bind) : undefined;
  const wordsFirst =
    !ring && query.words && dialect.wordsFirst && (query.sort === 'newest' || query.sort === 'oldest')
      ? dialect.wordsFirst(bind(dialect.wordsValue(query.words)))
      : undefined;
  inList('p.status', query.status);
  if (query.categoryId) inList('p.category_id', query.categoryId);
  if (query.sex) inList('pr.sex', query.sex);
  if (query.ageGroup) inList('pr.age_group', query.ageGroup);
  if (query.size) inList('pr.size', query.size);
  for (const [name, value] of Object.entries(query.booleans)) {
    where.push(
      `pr.${BOOLEAN_FILTERS[name as keyof typeof BOOLEAN_FILTERS]} = ${bind(dialect.boolean(value))}`,
    );
  }
  if (query.hasPhotos !== undefined) {
    where.push(`${query.hasPhotos ? '' : 'NOT '}EXISTS (SELECT 1 FROM pet_photos ph WHERE ph.pet_id = p.id)`);
  }
  if (query.words && !wordsFirst) where.push(dialect.words(bind(dialect.wordsValue(query.words))));
  if (query.near && !ring) {
    const { latitude, longitude, radiusKm } = query.near;
    const box = boundingBox(latitude, longitude, radiusKm);
    where.push(`pr.latitude BETWEEN ${bind(box.lat[0])} AND ${bind(box.lat[1])}`);
    if (box.lon) {
      const ranges = box.lon.map(([a, b]) => `pr.longitude BETWEEN ${bind(a)} AND ${bind(b)}`);
      where.push(ranges.length === 1 ? ranges[0]! : `(${ranges.join(' OR ')})`);
    }
    where.push('pr.longitude IS NOT NULL');
  }
  const profileNeeded =
    query.sex || query.ageGroup || query.size || Object.keys(query.booleans).length > 0 || query.near;
  const inner =
    `SELECT ${wordsFirst?.id ?? 'p.id'} AS id, p.name, p.category_id AS "categoryId", p.status, pr.doc, ` +
    `pr.updated_at AS "updatedAt", ${distance} AS distance FROM ` +
    (from
      ? `${from} JOIN pets p ON p.id = pr.pet_id `
      : `${wordsFirst?.from ?? 'pets p'} ${profileNeeded ? '' : 'LEFT '}JOIN pet_profiles pr ON pr.pet_id = p.id `) +
    `WHERE ${where.join(' AND ')}`;

  const outer: string[] = [];
  if (query.near) outer.push(`distance <= ${bind(ring ? ring.outer : query.near.radiusKm)}`);
  const after = query.after;
  let order: string;
  switch (query.sort) {
    case 'newest':
      if (after) outer.push(`id < ${bind(after.id)}`);
      order = 'id DESC';
      break;
    case 'oldest':
      if (after) outer.push(`id > ${bind(after.id)}`);
      order = 'id';
      break;
    case 'name':
      if (after) {
        outer.push(`(name > ${bind(after.name)} OR (name = ${bind(after.name)} AND id > ${bind(after.id)}))`);
      }
      order = 'name, id';
      break;
    case 'distance':
      if (after) {
        outer.push(
          `(distance > ${bind(after.distance)} OR (distance = ${bind(after.distance)} AND id > ${bind(after.id)}))`,
        );
      }
      order = 'distance, id';
      break;
  }
  const text =
    `SELECT * FROM (${inner}) s${outer.length ? ` WHERE ${outer.join(' AND ')}` : ''} ` +
    `ORDER BY ${order} LIMIT ${query.limit + 1}`;
  return { text, values };
}

/**
 * The ring to read for a page sorted by distance (ringCover), after `previous` (none: the first), or
 * undefined when `previous` answered it. Every ring starts at the cursor's distance, so the pets nearer
 * than the page are never read; it reaches out far enough for more than a page (then the page is the
 * nearest `limit` of it, and the rows past the ring are farther than all of them) or to the radius.
 * How far to reach first: the previous page's span of distances (carried in the cursor), else a
 * thirty-second of the radius; a ring that held too few is widened towards twice a page by its density.
 * Bounded whatever the cursor holds: at most MAX_RINGS rings, each at least a 4096th of the radius wide.
 */
export function nextRing(query: ListingQuery, previous?: { ring: Ring; found: number }): Ring | undefined {
  const near = query.near!;
  const start = query.after?.distance ?? 0;
  const index = previous ? previous.ring.index + 1 : 0;
  let outer: number;
  if (previous && (previous.found > query.limit || previous.ring.outer >= near.radiusKm)) return undefined;
  if (index >= MAX_RINGS - 1) outer = near.radiusKm;
  else if (!previous) {
    const span = query.after?.span;
    outer = start + (span !== undefined && span > 0 ? 1.5 * span : near.radiusKm / 32);
  } else {
    const before = previous.ring.outer;
    // Rows grow with the ring's area (outer² − start²): aim at twice the page, at least twice the width.
    const area = before * before - start * start;
    const aimed =
      previous.found > 0
        ? Math.sqrt(start * start + (area * 2 * (query.limit + 1)) / previous.found)
        : start + 8 * (before - start);
    outer = Math.min(Math.max(aimed, start + 2 * (before - start)), start + 16 * (before - start));
  }
  // Never narrower than a part of the radius, so that each ring (at least doubling) gets somewhere.
  outer = Math.min(Math.max(outer, start + near.radiusKm * MIN_RING_PART), near.radiusKm);
  return { ranges: ringCover(near.latitude, near.longitude, start, outer), outer, index };
}

export const BOOLEAN_FILTERS = {
  goodWithChildren: 'good_children',
  goodWithDogs: 'good_dogs',
  goodWithCats: 'good_cats',
  houseTrained: 'house_trained',
  specialNeeds: 'special_needs',
} as const;
