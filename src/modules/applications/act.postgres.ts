/**
 * The workflow's actions on PostgreSQL. One action alone is `actAll` of one input in its own transaction;
 * those of one turn without an Idempotency-Key share one transaction and its statements (TurnBatch and
 * sharedThenAlone, db/turn-writes.ts), as submissions do (submit.postgres.ts): the pets locked, then the
 * applications (the one order every writer follows: pets → orders → applications), each action decided in
 * turn on the rows as locked, the approvals' orders placed together (decided in turn, as the orders' own
 * placements are: of two approvals for one pet, the second finds it held), the applications saved in one
 * statement and their events appended in another. Each is answered after that commit with its own outcome;
 * a failure rolls the shared transaction back and the others run again alone.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { TurnBatch } from '../../db/turn-batch.js';
import { sharedThenAlone } from '../../db/turn-writes.postgres.js';
import type { PostgresEventAppender } from '../events/index.js';
import { ordersWithin } from '../orders/index.js';
import { petsWithin } from '../pets/index.js';
import {
  APPROVAL_ORDER_LIMIT,
  applicationEvents,
  decideAction,
  type ApplicationRecord,
} from './decisions.js';
import { fullFromRow, updateValues } from './rows.js';
import { SQL } from './sql.postgres.js';
import type { ActInput, FullApplication, WriteOutcome } from './store.js';

type Row = Record<string, unknown>;

interface Move {
  k: number;
  found: FullApplication;
  after: ApplicationRecord;
  now: number;
  cancelOrder: number | null;
}

export async function actAll(
  db: PostgresDatabase,
  client: PoolClient,
  events: PostgresEventAppender,
  inputs: readonly ActInput[],
): Promise<WriteOutcome[]> {
  const ids = inputs.map((input) => input.id);
  // The pets first (an application's pet never changes, so reading it unlocked is safe), then the rows.
  const pets = await client.query<{ pet_id: number }>({
    name: 'applications_pets_of',
    text: SQL.petsOf,
    values: [ids],
  });
  if (pets.rows.length > 0) {
    await petsWithin.postgresLock(
      client,
      pets.rows.map((row) => Number(row.pet_id)),
      'update',
    );
  }
  const locked = await client.query<Row>({
    name: 'applications_lock_by_ids',
    text: SQL.lockByIds,
    values: [ids],
  });
  const found = new Map(
    locked.rows.map((row) => {
      const full = fullFromRow(row);
      return [full.application.id, full] as const;
    }),
  );
  const outcomes: WriteOutcome[] = [];
  const moves: Move[] = [];
  const placing: Move[] = [];
  inputs.forEach((input, k) => {
    const before = found.get(input.id);
    const decision = decideAction(before?.application, input.request);
    if (decision.kind !== 'move') {
      outcomes[k] = decision;
      return;
    }
    const move = {
      k,
      found: before!,
      after: decision.after,
      now: input.request.now,
      cancelOrder: decision.cancelOrder,
    };
    if (decision.placeOrder) placing.push(move);
    else moves.push(move);
  });
  if (placing.length > 0) {
    const placed = await ordersWithin.postgresPlace(
      db,
      client,
      placing.map((move) => ({
        accountId: move.after.accountId,
        petId: move.after.petId,
        maxOpen: APPROVAL_ORDER_LIMIT,
        now: move.now,
      })),
    );
    placing.forEach((move, i) => {
      const outcome = placed[i]!;
      if (outcome.kind === 'placed')
        moves.push({ ...move, after: { ...move.after, orderId: outcome.order.id } });
      // Nothing was written for it: the application stays as it was.
      else outcomes[move.k] = { kind: 'pet_not_available', unknown: outcome.kind === 'unknown_pet' };
    });
  }
  if (moves.length > 0) {
    moves.sort((a, b) => a.k - b.k);
    const rows = moves.map((move) => updateValues(move.after));
    await client.query({
      name: 'applications_update_all',
      text: SQL.updateApplications,
      values: rows[0]!.map((_, column) => rows.map((row) => row[column])),
    });
    await events.appendAll(
      client,
      moves.flatMap((move) => applicationEvents(move.found.application, move.after, move.now)),
    );
  }
  for (const move of moves) {
    // Saved before the order is cancelled, so the cancellation's listener finds it no longer approved.
    if (move.cancelOrder !== null) {
      await ordersWithin.postgresCancel(db, client, move.cancelOrder, move.now);
      const { rows } = await client.query<Row>({
        name: 'applications_by_seq',
        text: SQL.bySeq,
        values: [move.after.seq],
      });
      outcomes[move.k] = { kind: 'done', application: fullFromRow(rows[0]!) };
    } else {
      // As saved: the row now holds exactly these values, and its applicant is unchanged by an action.
      outcomes[move.k] = {
        kind: 'done',
        application: { application: move.after, applicant: move.found.applicant },
      };
    }
  }
  return outcomes;
}

/** The turn's actions without an Idempotency-Key: shared, then alone (one action per application shared). */
export function actionBatch(
  db: PostgresDatabase,
  alone: (input: ActInput) => Promise<WriteOutcome>,
  shared: (client: PoolClient, inputs: ActInput[]) => Promise<WriteOutcome[]>,
): TurnBatch<ActInput, WriteOutcome> {
  return new TurnBatch((inputs: ActInput[]) =>
    sharedThenAlone(db, inputs, alone, shared, (input) => input.id),
  );
}
