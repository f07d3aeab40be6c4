import { generateApiKey, generateKeyId, hashApiKey, keyHint } from './keys.js';
import type { AccountRepository } from './repository.js';
import type { Scope } from './scopes.js';

/**
 * Mints a key for an account: the one way keys are made, used by the CLI's `keys create` and by the tests.
 * Returns the secret (shown once, never stored) and the key's public id.
 */
export async function mintKey(
  accounts: AccountRepository,
  accountId: number,
  now: number,
  expiresAt: number | null = null,
  /** `null`: every scope. */
  scopes: readonly Scope[] | null = null,
): Promise<{ key: string; id: string }> {
  const key = generateApiKey();
  const id = generateKeyId();
  await accounts.createKey(
    accountId,
    { id, hash: hashApiKey(key), hint: keyHint(key), expiresAt, scopes },
    now,
  );
  return { key, id };
}
