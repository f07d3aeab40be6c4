/** The orders module's settings (its `settings`), read by src/config.ts with the service's own. */
import { setting } from '../module.js';
import { wholeNumber } from '../setting-parsers.js';

/** MAX_OPEN_ORDERS's default, for apps built without a full Config. */
export const DEFAULT_MAX_OPEN_ORDERS = 5;

export const orderSettings = [
  setting({
    name: 'MAX_OPEN_ORDERS',
    key: 'maxOpenOrders',
    default: String(DEFAULT_MAX_OPEN_ORDERS),
    description: 'Open (placed or approved) store orders one account may hold at once.',
    parse: wholeNumber(DEFAULT_MAX_OPEN_ORDERS, 1, 1_000_000),
  }),
];

declare module '../module.js' {
  interface ModuleSettings {
    /** How many open (placed or approved) store orders one account may hold at once. */
    maxOpenOrders: number;
  }
}
