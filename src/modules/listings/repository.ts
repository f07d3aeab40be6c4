import type { RepositoryFactory } from '../../db/database.js';
import type { PhotoRecord } from '../photos/index.js';
import type { PetStatus } from '../pets/index.js';
import { PostgresListingRepository } from './repository.postgres.js';
import { SqliteListingRepository } from './repository.sqlite.js';
import type { ListingQuery } from './query.js';

/** One search hit as stored: the pet, its profile document (or none), its distance when `near` was given. */
export interface ListingRow {
  id: number;
  name: string;
  categoryId: number;
  status: PetStatus;
  doc: string | null;
  updatedAt: number | null;
  distance: number | null;
}

/**
 * Search over pets and their profiles, implemented once per backend; test/contracts/listings.contract.test.ts
 * holds both to this contract directly, test/listings.test.ts through the API:
 * - `search` returns at most `limit` + 1 pets (the one past the page tells the caller another exists)
 *   matching every filter of the query (AND across filters, OR within one), in the sort's order with the
 *   pet id breaking ties, starting after `query.after`.
 *   A page costs what its `limit` rows cost, not what the pages before it did (keyset paging).
 * - With `near`: only pets whose profile has both coordinates and whose great-circle distance is at most
 *   `radiusKm` (a bounding box narrows by index, the distance decides), `distance` in km.
 * - `words`: every word is in the pet's name, breed or description, ignoring case and accents.
 * - `primaryPhotos` returns the photo at position 0 of each of the given pets that has one.
 * - `readVersion` labels search pages for the exact page cache, with the promises of src/http/page-cache.ts
 *   (the database's version, which every write to pets, profiles or photos moves).
 */
export interface ListingRepository {
  search(query: ListingQuery): Promise<ListingRow[]>;
  readVersion(): string | undefined;
  /** After a bulk load (seeding): the planner's statistics of the catalogue's tables brought up to date. */
  refreshStatistics(): Promise<void>;
  primaryPhotos(petIds: number[]): Promise<PhotoRecord[]>;
}

export const listingRepository: RepositoryFactory<ListingRepository> = {
  sqlite: (db) => new SqliteListingRepository(db),
  postgres: (db) => new PostgresListingRepository(db),
};
