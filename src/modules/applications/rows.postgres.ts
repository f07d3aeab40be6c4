/**
 * What the PostgreSQL store's writes share (saving an application with its events, reading one back) and the
 * orders' and pets' listeners, which run inside those modules' transactions with their locks held.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { eventRepository, type PostgresEventAppender } from '../events/index.js';
import type { OrderMove } from '../orders/index.js';
import type { PetRemoval } from '../pets/index.js';
import { applicationEvents, decideOrderMove, decidePetRemoved, type ApplicationRecord } from './decisions.js';
import { applicationFromRow, fullFromRow, updateValues } from './rows.js';
import { SQL } from './sql.postgres.js';
import type { FullApplication } from './store.js';

type Row = Record<string, unknown>;

export class PostgresApplicationRows {
  protected readonly events: PostgresEventAppender;

  constructor(protected readonly db: PostgresDatabase) {
    this.events = db.repository(eventRepository);
  }

  protected async save(
    client: PoolClient,
    before: ApplicationRecord | undefined,
    after: ApplicationRecord,
    now: number,
    patched = false,
  ) {
    await client.query({
      name: 'applications_update',
      text: SQL.updateApplication,
      values: updateValues(after),
    });
    await this.events.appendAll(client, applicationEvents(before, after, now, patched));
  }

  protected async full(client: PoolClient, seq: number): Promise<FullApplication> {
    const { rows } = await client.query<Row>({ name: 'applications_by_seq', text: SQL.bySeq, values: [seq] });
    return fullFromRow(rows[0]!);
  }

  /** Orders' listener (within.ts): the pets' and orders' locks are held; the applications are locked here. */
  async onOrderMoves(client: PoolClient, moves: readonly OrderMove[]): Promise<void> {
    const relevant = moves.filter((m) => m.to === 'delivered' || m.to === 'cancelled');
    if (relevant.length === 0) return;
    const { rows } = await client.query<Row>({
      name: 'applications_lock_open_of_pets',
      text: SQL.lockOpenOfPets,
      values: [relevant.map((m) => m.petId)],
    });
    const apps = rows.map(applicationFromRow);
    for (const move of relevant) {
      const ofPet = apps.filter((a) => a.petId === move.petId);
      for (const after of decideOrderMove(ofPet, move)) {
        const index = apps.findIndex((a) => a.seq === after.seq);
        await this.save(client, apps[index], after, move.now);
        apps[index] = after;
      }
    }
  }

  /** Pets' listener: the removed pets' open applications close. */
  async onPetRemovals(client: PoolClient, removals: readonly PetRemoval[]): Promise<void> {
    const { rows } = await client.query<Row>({
      name: 'applications_lock_open_of_pets',
      text: SQL.lockOpenOfPets,
      values: [removals.map((r) => r.petId)],
    });
    const apps = rows.map(applicationFromRow);
    for (const removal of removals) {
      const ofPet = apps.filter((a) => a.petId === removal.petId);
      for (const after of decidePetRemoved(ofPet, removal.now)) {
        await this.save(
          client,
          ofPet.find((a) => a.seq === after.seq),
          after,
          removal.now,
        );
      }
    }
  }
}
