import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import type { PhotoRecord } from '../photos/schemas.js';
import type { ListingQuery } from './query.js';
import {
  distanceKm,
  searchSql,
  type Dialect,
  type ListingRepository,
  type ListingRow,
} from './repository.js';

const dialect: Dialect = {
  placeholder: () => '?',
  boolean: (value) => (value ? 1 : 0),
  distance: (lat, lon) => `catalogue_distance_km(${lat}, ${lon}, pr.latitude, pr.longitude)`,
  // FTS5 with the unicode61 tokenizer (diacritics removed, case folded): quoted words, all required.
  words: (value) => `p.id IN (SELECT rowid FROM listing_words WHERE listing_words MATCH ${value})`,
  wordsValue: (words) => words.map((word) => `"${word}"`).join(' '),
};

export class SqliteListingRepository implements ListingRepository {
  private readonly db: BetterSqlite3.Database;
  /** Prepared statements by their text: a query shape is prepared once. */
  private readonly statements = new Map<string, BetterSqlite3.Statement<unknown[], ListingRow>>();

  constructor(database: SqliteDatabase) {
    this.db = database.db;
    // The same formula as the API's, so the radius is decided by one computation.
    this.db.function('catalogue_distance_km', { deterministic: true }, (lat1, lon1, lat2, lon2) =>
      lat2 === null || lon2 === null
        ? null
        : distanceKm(lat1 as number, lon1 as number, lat2 as number, lon2 as number),
    );
  }

  search(query: ListingQuery): Promise<ListingRow[]> {
    return runAsPromise(() => {
      const { text, values } = searchSql(query, dialect);
      let statement = this.statements.get(text);
      if (!statement) {
        statement = this.db.prepare<unknown[], ListingRow>(text);
        if (this.statements.size >= 256) this.statements.clear();
        this.statements.set(text, statement);
      }
      return statement.all(...values);
    });
  }

  primaryPhotos(petIds: number[]): Promise<PhotoRecord[]> {
    if (petIds.length === 0) return Promise.resolve([]);
    return runAsPromise(() =>
      this.db
        .prepare<number[], PhotoRecord>(
          `SELECT id, pet_id AS petId, position, width, height, created_at AS createdAt FROM pet_photos
           WHERE position = 0 AND pet_id IN (${petIds.map(() => '?').join(', ')})`,
        )
        .all(...petIds),
    );
  }
}
