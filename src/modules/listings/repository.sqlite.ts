import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import type { PhotoRecord } from '../photos/index.js';
import type { ListingQuery } from './query.js';
import { BANDS_PER_DEGREE } from './cover.js';
import type { ListingRepository, ListingRow } from './repository.js';
import { distanceKm, nextRing, searchSql, type Ring, type Dialect } from './search-sql.js';

const dialect: Dialect = {
  placeholder: () => '?',
  boolean: (value) => (value ? 1 : 0),
  distance: (lat, lon) => `catalogue_distance_km(${lat}, ${lon}, pr.latitude, pr.longitude)`,
  // FTS5 over words folded by catalogue_fold (src/db/fold.ts, migration 021): quoted words, all required.
  words: (value) => `p.id IN (SELECT rowid FROM listing_words WHERE listing_words MATCH ${value})`,
  wordsValue: (words) => words.map((word) => `"${word}"`).join(' '),
  // Newest or oldest first, FTS5 hands out its matches in rowid order: the page reads as far as it needs.
  wordsFirst: (value) => ({
    from: `listing_words CROSS JOIN pets p ON p.id = listing_words.rowid AND listing_words MATCH ${value}`,
    id: 'listing_words.rowid',
  }),
  // CROSS JOIN keeps the ranges the outer loop: one seek of the location index (migration 018) per range.
  cover: (ranges, bind) =>
    `json_each(${bind(JSON.stringify(ranges))}) c CROSS JOIN pet_profiles pr ` +
    `ON CAST((pr.latitude + 90) * ${BANDS_PER_DEGREE} AS INTEGER) = c.value ->> 0 ` +
    `AND pr.longitude BETWEEN c.value ->> 1 AND c.value ->> 2`,
};

export class SqliteListingRepository implements ListingRepository {
  private readonly db: BetterSqlite3.Database;
  /** Prepared statements by their text: a query shape is prepared once. */
  private readonly statements = new Map<string, BetterSqlite3.Statement<unknown[], ListingRow>>();

  private readonly primary: BetterSqlite3.Statement<[string], PhotoRecord>;

  constructor(private readonly database: SqliteDatabase) {
    this.db = database.db;
    this.primary = this.db.prepare<[string], PhotoRecord>(
      `SELECT id, pet_id AS petId, position, width, height, created_at AS createdAt FROM pet_photos
       WHERE position = 0 AND pet_id IN (SELECT value FROM json_each(?))`,
    );
    // The same formula as the API's, so the radius is decided by one computation.
    this.db.function('catalogue_distance_km', { deterministic: true }, (lat1, lon1, lat2, lon2) =>
      lat2 === null || lon2 === null
        ? null
        : distanceKm(lat1 as number, lon1 as number, lat2 as number, lon2 as number),
    );
  }

  readVersion(): string | undefined {
    return this.database.readVersion;
  }

  /** Nothing: SQLite plans these searches by its rules, without statistics (ANALYZE would change them). */
  refreshStatistics(): Promise<void> {
    return Promise.resolve();
  }

  search(query: ListingQuery): Promise<ListingRow[]> {
    return runAsPromise(() => {
      if (!query.near || query.sort !== 'distance') return this.run(query);
      let rows: ListingRow[] = [];
      for (let ring = nextRing(query); ring; ring = nextRing(query, { ring, found: rows.length })) {
        rows = this.run(query, ring);
      }
      return rows;
    });
  }

  private run(query: ListingQuery, ring?: Ring): ListingRow[] {
    const { text, values } = searchSql(query, dialect, ring);
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare<unknown[], ListingRow>(text);
      if (this.statements.size >= 256) this.statements.clear();
      this.statements.set(text, statement);
    }
    return statement.all(...values);
  }

  primaryPhotos(petIds: number[]): Promise<PhotoRecord[]> {
    if (petIds.length === 0) return Promise.resolve([]);
    // The ids as one JSON value: one statement prepared once, whatever the page's length.
    return runAsPromise(() => this.primary.all(JSON.stringify(petIds)));
  }
}
