/** The webhooks module's settings (its `settings`), read by src/config.ts with the service's own. */
import { setting } from '../module.js';
import { wholeNumber } from '../setting-parsers.js';

/** MAX_WEBHOOK_ENDPOINTS's default, for apps built without a full Config. */
export const DEFAULT_MAX_WEBHOOK_ENDPOINTS = 16;

function allowHosts(raw: string | undefined): string[] {
  if (!raw?.trim()) return [];
  return raw.split(',').map((entry) => {
    // Compared with a URL's hostname: lower-case, IPv6 without brackets.
    const host = entry
      .trim()
      .replace(/^\[(.*)\]$/, '$1')
      .toLowerCase();
    if (!/^[a-z0-9.:_-]+$/.test(host)) throw new Error(`"${entry.trim()}" is not a hostname or IP address`);
    return host;
  });
}

export const webhookSettings = [
  setting({
    name: 'MAX_WEBHOOK_ENDPOINTS',
    key: 'maxWebhookEndpoints',
    default: String(DEFAULT_MAX_WEBHOOK_ENDPOINTS),
    description: 'Webhook endpoints one account may hold; beyond, 409 webhook_endpoint_limit.',
    parse: wholeNumber(DEFAULT_MAX_WEBHOOK_ENDPOINTS, 1, 10_000),
  }),
  setting({
    name: 'WEBHOOK_ALLOW_HOSTS',
    key: 'webhookAllowHosts',
    default: undefined,
    description: 'Comma-separated hosts webhook URLs may name over http and at private addresses.',
    parse: allowHosts,
  }),
  setting({
    name: 'WEBHOOK_POLL_MS',
    key: 'webhookPollMs',
    default: '1000',
    description: 'How often the webhook dispatcher looks for due deliveries when nothing wakes it.',
    parse: wholeNumber(1000, 10, 60_000),
  }),
  setting({
    name: 'WEBHOOK_LEASE_MS',
    key: 'webhookLeaseMs',
    default: '30000',
    description: 'How long a claimed delivery is leased to one dispatcher (keep above 15 s).',
    parse: wholeNumber(30_000, 100, 3_600_000),
  }),
];

declare module '../module.js' {
  interface ModuleSettings {
    /** How many webhook endpoints one account may hold. */
    maxWebhookEndpoints: number;
    /**
     * Hosts (names or addresses) a webhook URL may use over plain http and whose private or loopback addresses
     * deliveries may reach; everything else must be https to a public address.
     */
    webhookAllowHosts: string[];
    /** How often the webhook dispatcher looks for due deliveries when nothing wakes it. */
    webhookPollMs: number;
    /**
     * How long a claimed delivery is leased to one dispatcher; a delivery whose process died is sent again
     * once its lease expires. Keep it above the 15 s delivery timeout so a slow answer is not sent twice.
     */
    webhookLeaseMs: number;
  }
}
