/**
 * API key format: `pas_` + 32 base62 characters of randomness (~190 bits) + 6 base62 characters of CRC-32
 * over the random part. The fixed prefix lets secret scanners recognise leaked keys; the checksum lets us
 * reject typos and junk without touching the database. Only the SHA-256 of a key is stored: the keys are
 * high-entropy, so a slow password hash would add latency to every request without adding safety.
 */
import * as crypto from 'node:crypto';
import { createHash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PREFIX = 'pas_';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^pas_[0-9A-Za-z]{38}$/;

function randomBase62(length: number): string {
  let out = '';
  // Rejection sampling through randomInt keeps the characters uniform.
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(62)];
  return out;
}

function base62Fixed(value: number, length: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function checksum(random: string): string {
  return base62Fixed(crc32(random) >>> 0, CHECKSUM_LENGTH);
}

export function generateApiKey(): string {
  const random = randomBase62(RANDOM_LENGTH);
  return KEY_PREFIX + random + checksum(random);
}

/** True when the key has the right shape and its checksum matches. */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const random = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + RANDOM_LENGTH);
  return key.slice(KEY_PREFIX.length + RANDOM_LENGTH) === checksum(random);
}

// crypto.hash (Node >= 20.12) digests in one call, without a Hash object per request; older Node 20s lack it.
const oneShotHash = (crypto as Partial<Pick<typeof crypto, 'hash'>>).hash;

/** Runs on every authenticated request. */
export function hashApiKey(key: string): string {
  return oneShotHash ? oneShotHash('sha256', key, 'hex') : createHash('sha256').update(key).digest('hex');
}

/** Public identifier of a key, safe to show in listings and logs. */
export function generateKeyId(): string {
  return 'key_' + randomBase62(16);
}

/** What listings show of a key so its owner can recognise it. */
export function keyHint(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 6) + '…';
}
