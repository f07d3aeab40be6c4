// Placeholder until the PostgreSQL issue lands.
import type { Storage } from './storage.js';
export const PostgresStorage = class {
  constructor(_url: string, _options: { poolSize: number; timeoutMs: number }) {
    throw new Error('PostgreSQL storage is not implemented yet');
  }
} as unknown as new (url: string, options: { poolSize: number; timeoutMs: number }) => Storage;
