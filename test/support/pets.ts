/**
 * Helpers over the pets repository for contract suites: the pets contract itself, and the suites that use
 * pet creation as their carrier (idempotency, migrations, PostgreSQL outages).
 */
import assert from 'node:assert/strict';
import type { Database } from '../../src/db/database.js';
import type { IdempotencyInput } from '../../src/db/idempotency/records.js';
import { type CreatePetResult, petRepository } from '../../src/modules/pets/repository.js';
import type { Pet, PetStatus } from '../../src/modules/pets/schemas.js';
import { DAY } from './contract.js';

export const STATUSES: PetStatus[] = ['available', 'pending', 'sold'];

/** The idempotency input of a createPet call by `accountId` at `now`, records kept for `retentionMs`. */
export function idem(
  accountId: number,
  key: string,
  fingerprint: string,
  now: number,
  retentionMs = DAY,
): IdempotencyInput {
  return { accountId, operation: 'createPet', key, fingerprint, now, notBefore: now - retentionMs };
}

export function createdPet(result: CreatePetResult): Pet {
  assert.equal(result.kind, 'created', `expected created, got ${JSON.stringify(result)}`);
  return (result as Extract<CreatePetResult, { kind: 'created' }>).pet;
}

/** Every pet, through the keyset pages a client would walk. */
export async function listAll(storage: Database, status?: PetStatus, pageSize = 100): Promise<Pet[]> {
  const all: Pet[] = [];
  for (;;) {
    const page = await storage
      .repository(petRepository)
      .list({ status, afterId: all.at(-1)?.id, limit: pageSize });
    all.push(...page);
    if (page.length < pageSize) return all;
  }
}
