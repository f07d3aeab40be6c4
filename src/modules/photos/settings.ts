/** The photos module's settings (its `settings`), read by src/config.ts with the service's own. */
import { setting } from '../module.js';
import { wholeNumber } from '../setting-parsers.js';

/** Defaults, for apps built without a full Config. */
export const DEFAULT_DECODE_BUDGET_MB = 512;
export const DEFAULT_DECODE_WAIT_MS = 2000;

export const photoSettings = [
  setting({
    name: 'PHOTO_DECODE_BUDGET_MB',
    key: 'photoDecodeBudgetMb',
    default: String(DEFAULT_DECODE_BUDGET_MB),
    description: 'Memory the image decodes in flight may hold together; beyond it uploads wait, then 503.',
    parse: wholeNumber(DEFAULT_DECODE_BUDGET_MB, 64, 1_048_576),
  }),
  setting({
    name: 'PHOTO_DECODE_WAIT_MS',
    key: 'photoDecodeWaitMs',
    default: String(DEFAULT_DECODE_WAIT_MS),
    description: 'How long an upload waits for room in the decode budget before 503 overloaded.',
    parse: wholeNumber(DEFAULT_DECODE_WAIT_MS, 0, 60_000),
  }),
];

declare module '../module.js' {
  interface ModuleSettings {
    /** Megabytes the image decodes in flight may hold together. */
    photoDecodeBudgetMb: number;
    /** How long an upload waits for room in the decode budget, in milliseconds. */
    photoDecodeWaitMs: number;
  }
}
