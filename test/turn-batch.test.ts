import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SETTLED_PER_TURN, settle, TurnBatch } from '../src/db/turn-batch.js';

describe('TurnBatch', () => {
  test('calls made in one turn run as one batch, in order, each caller getting its own outcome', async () => {
    const batches: number[][] = [];
    const batch = new TurnBatch<number, number>((inputs) => {
      batches.push(inputs);
      return inputs.map((n) =>
        settle(() => {
          if (n < 0) throw new Error(`negative ${n}`);
          return n * 10;
        }),
      );
    });
    const settled = await Promise.allSettled([batch.add(1), batch.add(-2), batch.add(3)]);
    assert.deepEqual(batches, [[1, -2, 3]]);
    assert.deepEqual(settled[0], { status: 'fulfilled', value: 10 });
    assert.equal(settled[1]!.status, 'rejected');
    assert.match(String((settled[1] as PromiseRejectedResult).reason), /negative -2/);
    assert.deepEqual(settled[2], { status: 'fulfilled', value: 30 });

    // A later turn is a new batch.
    assert.equal(await batch.add(4), 40);
    assert.deepEqual(batches, [[1, -2, 3], [4]]);
  });

  test('calls made while a batch is being answered go to the next batch', async () => {
    const batches: string[][] = [];
    const batch = new TurnBatch<string, string>((inputs) => {
      batches.push(inputs);
      return inputs.map((s) => ({ value: s }));
    });
    const second = batch.add('first').then(() => batch.add('second'));
    assert.equal(await second, 'second');
    assert.deepEqual(batches, [['first'], ['second']]);
  });

  test('a large batch settles its callers in order, at most SETTLED_PER_TURN per turn of the event loop', async () => {
    const count = SETTLED_PER_TURN * 2 + 10;
    const batch = new TurnBatch<number, number>((inputs) => inputs.map((n) => ({ value: n })));
    // The turn each caller was settled in, counted by an immediate that re-arms itself every turn.
    let turn = 0;
    let counting = true;
    const tick = (): void => {
      turn++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const settledIn: number[] = [];
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        batch.add(i).then((n) => {
          order.push(n);
          settledIn.push(turn);
        }),
      ),
    );
    counting = false;
    assert.deepEqual(
      order,
      Array.from({ length: count }, (_, i) => i),
    );
    const perTurn = new Map<number, number>();
    for (const t of settledIn) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    assert.deepEqual([...perTurn.values()], [SETTLED_PER_TURN, SETTLED_PER_TURN, 10]);
  });

  test('an asynchronous batch (one database round trip) answers each caller when it resolves', async () => {
    const batches: string[][] = [];
    const batch = new TurnBatch<string, string | undefined>(async (inputs) => {
      batches.push(inputs);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return inputs.map((s) => ({ value: s === 'missing' ? undefined : s.toUpperCase() }));
    });
    assert.deepEqual(await Promise.all([batch.add('a'), batch.add('missing'), batch.add('b')]), [
      'A',
      undefined,
      'B',
    ]);
    assert.deepEqual(batches, [['a', 'missing', 'b']]);
    const rejecting = new TurnBatch<number, number>(() => Promise.reject(new Error('connection lost')));
    const settled = await Promise.allSettled([rejecting.add(1), rejecting.add(2)]);
    assert.deepEqual(
      settled.map((s) => s.status === 'rejected' && (s.reason as Error).message),
      ['connection lost', 'connection lost'],
    );
  });

  test('when the batch itself fails, every caller gets the translated error', async () => {
    const batch = new TurnBatch<number, number>(
      () => {
        throw new Error('commit failed');
      },
      (error) => new Error(`unavailable: ${(error as Error).message}`),
    );
    const settled = await Promise.allSettled([batch.add(1), batch.add(2)]);
    for (const outcome of settled) {
      assert.equal(outcome.status, 'rejected');
      assert.equal((outcome as PromiseRejectedResult).reason.message, 'unavailable: commit failed');
    }
  });
  test('a batch that returns more or fewer outcomes than callers fails every caller', async () => {
    for (const [label, run] of [
      ['fewer, synchronous', (inputs: number[]) => inputs.slice(1).map((value) => ({ value }))],
      ['more, synchronous', (inputs: number[]) => [...inputs, 0].map((value) => ({ value }))],
      [
        'fewer, asynchronous',
        (inputs: number[]) => Promise.resolve(inputs.slice(1).map((value) => ({ value }))),
      ],
    ] as const) {
      const batch = new TurnBatch<number, number>(run);
      const settled = await Promise.allSettled([batch.add(1), batch.add(2), batch.add(3)]);
      for (const outcome of settled) {
        assert.equal(outcome.status, 'rejected', `${label}: ${JSON.stringify(outcome)}`);
        assert.match(String((outcome as PromiseRejectedResult).reason), /outcomes for 3 callers/, label);
      }
    }
  });
});
