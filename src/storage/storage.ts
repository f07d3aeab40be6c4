import type { Category, Pet, PetStatus } from '../schemas.js';

export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** Quotas of the fixed plans; enterprise accounts carry their own numbers. */
export const PLAN_QUOTAS: Record<Exclude<Plan, 'enterprise'>, { perMinute: number; perDay: number }> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
};

export interface Account {
  id: number;
  name: string;
  plan: Plan;
  perMinute: number;
  perDay: number;
  /** Epoch ms of the last `accounts unban`; bans that started before it are void. */
  banLiftedAt: number | null;
}

export interface ApiKeyInfo {
  id: string;
  account: string;
  hint: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
}

/** What authentication learns from a key hash in one lookup. */
export interface KeyPrincipal {
  keyId: string;
  expiresAt: number | null;
  revokedAt: number | null;
  account: Account;
}

export interface ListPetsQuery {
  status?: PetStatus;
  /** Keyset position: only pets with a larger id. */
  afterId?: number;
  limit: number;
}

export interface NewPetRecord {
  name: string;
  categoryId: number;
  status: PetStatus;
}

/** How long an Idempotency-Key is remembered per account. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;

export interface IdempotencyInput {
  accountId: number;
  key: string;
  /** Hash of the canonical request body; a different body under the same key is a client error. */
  fingerprint: string;
  /** Records older than this (epoch ms) are treated as absent. */
  notBefore: number;
  now: number;
}

export type CreatePetResult =
  | { kind: 'created'; pet: Pet }
  | { kind: 'replayed'; status: number; body: Pet }
  | { kind: 'unknown_category' }
  | { kind: 'idempotency_mismatch' }
  | { kind: 'idempotency_in_progress' };

export interface AccountInput {
  name: string;
  /** Omitted: keep the existing plan, or `free` for a new account. */
  plan?: Plan;
  perMinute?: number;
  perDay?: number;
}

/**
 * Storage contract, implemented once per backend (SQLite, PostgreSQL); the shared suite in
 * test/storage.contract.test.ts holds every implementation to it.
 *
 * - Every write is atomic and durable once its promise resolves: a crash never leaves half a record.
 * - `listPets` returns pets ordered by id ascending, at most `limit`, filtered by `status`, starting after
 *   `afterId`; its cost is proportional to `limit`, whatever the depth (keyset on (status, id)).
 * - Ids are positive integers below 2^53, assigned in increasing order.
 * - `createPet` with an idempotency input creates at most one pet per (account, key) within the retention
 *   window: a repeat with the same fingerprint returns `replayed` with the first response, a different
 *   fingerprint returns `idempotency_mismatch`, and a concurrent duplicate returns `idempotency_in_progress`
 *   (or waits and replays).
 * - Errors reaching the database reject with `StorageUnavailableError`; nothing else is thrown for
 *   well-formed input.
 * - Timestamps are epoch milliseconds supplied by the caller's clock.
 */
export interface Storage {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Apply pending migrations; safe to call concurrently from several processes. `fresh` is true when this
   * storage instance created the schema (the server then prints how to create the first key).
   */
  migrate(): Promise<{ fresh: boolean }>;
  listPets(query: ListPetsQuery): Promise<Pet[]>;
  getPet(id: number): Promise<Pet | undefined>;
  createPet(pet: NewPetRecord, idempotency?: IdempotencyInput): Promise<CreatePetResult>;
  /** Insert many pets at once (demo data and benchmarks); returns how many were inserted. */
  seedPets(count: number, now: number): Promise<number>;
  listCategories(): Promise<Category[]>;

  /** Create the account, or update its plan/quotas when it exists. */
  upsertAccount(input: AccountInput, now: number): Promise<Account>;
  findAccount(name: string): Promise<Account | undefined>;
  countAccounts(): Promise<number>;
  createKey(
    accountId: number,
    key: { id: string; hash: string; hint: string; expiresAt: number | null },
    now: number,
  ): Promise<void>;
  listKeys(accountName?: string): Promise<ApiKeyInfo[]>;
  /** Returns false when no such key exists. */
  revokeKey(keyId: string, now: number): Promise<boolean>;
  findKeyByHash(hash: string): Promise<KeyPrincipal | undefined>;
  /** Record that bans of this account started before `now` are lifted. Returns false for an unknown account. */
  liftBan(accountName: string, now: number): Promise<boolean>;
  /** Delete idempotency records older than `before`. */
  purgeIdempotency(before: number): Promise<void>;

  /**
   * A random id (a UUID) written once, by the migration that creates this database, and never changed.
   * The Redis counter store namespaces every key by it, so two deployments that share a Redis (production
   * and staging, whatever REDIS_PREFIX says) never share counts or bans, while instances on one database do.
   */
  installationId(): Promise<string>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Schema version whose migration creates the one-row `installation` table; both backends insert its id. */
export const INSTALLATION_MIGRATION = 2;

/** The database could not be reached or timed out; the API answers 503. */
export class StorageUnavailableError extends Error {
  constructor(cause?: unknown) {
    super('storage unavailable', { cause });
    this.name = 'StorageUnavailableError';
  }
}

export const DEFAULT_CATEGORIES: Category[] = [
  { id: 1, name: 'dogs' },
  { id: 2, name: 'cats' },
  { id: 3, name: 'birds' },
  { id: 4, name: 'rabbits' },
  { id: 5, name: 'small mammals' },
  { id: 6, name: 'reptiles' },
  { id: 7, name: 'fish' },
];

export function quotaFor(
  plan: Plan,
  perMinute?: number,
  perDay?: number,
): { perMinute: number; perDay: number } {
  if (plan === 'enterprise') {
    return {
      perMinute: perMinute ?? PLAN_QUOTAS.business.perMinute,
      perDay: perDay ?? PLAN_QUOTAS.business.perDay,
    };
  }
  return PLAN_QUOTAS[plan];
}

const DEMO_NAMES = ['Rex', 'Luna', 'Milo', 'Bella', 'Coco', 'Max', 'Nala', 'Oscar', 'Kiwi', 'Pepper'];

/** Deterministic demo pet number i (0-based), shared by every backend's seeding. */
export function demoPet(i: number): NewPetRecord {
  return {
    name: `${DEMO_NAMES[i % DEMO_NAMES.length]} ${i + 1}`,
    categoryId: (i % DEFAULT_CATEGORIES.length) + 1,
    status: PET_STATUS_CYCLE[i % PET_STATUS_CYCLE.length]!,
  };
}
const PET_STATUS_CYCLE: PetStatus[] = ['available', 'available', 'pending', 'sold'];
