/** Store-order steps shared by the orders suites and the CLI tests: all through the API. */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { bearer } from '../helpers.js';

/** A new `available` pet, made with createPet; returns its id. */
export async function availablePet(app: FastifyInstance, key: string): Promise<number> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: bearer(key),
    payload: { name: 'Orderable', categoryId: 1 },
  });
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { id: number }).id;
}

/** placeOrder for `petId`; returns the response. */
export function placeOrder(
  app: FastifyInstance,
  key: string,
  petId: number,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: '/v1/store/orders',
    headers: { ...bearer(key), ...headers },
    payload: { petId },
  });
}

/** A fresh pet ordered by `key`'s account; returns the order's id and its pet's. */
export async function newOrder(app: FastifyInstance, key: string): Promise<{ id: number; petId: number }> {
  const petId = await availablePet(app, key);
  const res = await placeOrder(app, key, petId);
  assert.equal(res.statusCode, 201, res.body);
  return { id: (res.json() as { id: number }).id, petId };
}

/** One of approve/deliver/cancel on an order; no body. */
export function act(
  app: FastifyInstance,
  key: string,
  id: number | string,
  action: 'approve' | 'deliver' | 'cancel',
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: `/v1/store/orders/${id}/${action}`,
    headers: { ...bearer(key), ...headers },
  });
}

/** The pet's status as getPet reports it. */
export async function petStatus(app: FastifyInstance, key: string, petId: number): Promise<string> {
  const res = await app.inject({ url: `/v1/pets/${petId}`, headers: bearer(key) });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as { status: string }).status;
}

/** The pet status an order in `status` leaves its pet in. */
export const PET_FOR_ORDER: Record<string, string> = {
  placed: 'pending',
  approved: 'pending',
  delivered: 'sold',
  cancelled: 'available',
};
