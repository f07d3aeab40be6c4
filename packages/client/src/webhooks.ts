/**
 * Verifying deliveries: the service signs per the Standard Webhooks specification with the
 * `standardwebhooks` package, and this checks with the same package (signature over id, timestamp and the
 * raw body; timestamp within five minutes), so the two cannot disagree.
 */
import { Webhook } from 'standardwebhooks';
import type { Event } from './types.js';

/** The headers of a delivery: a fetch `Headers`, or a plain object as Node's `req.headers` is. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** The delivery is not signed by any of the secrets, is too old or too new, or is not an event. */
export class WebhookVerificationError extends Error {
  override readonly name: string = 'WebhookVerificationError';
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
  }
}

const HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function headerRecord(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof (headers as Headers).get === 'function') {
    for (const name of HEADERS) {
      const value = (headers as Headers).get(name);
      if (value !== null) out[name] = value;
    }
    return out;
  }
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if ((HEADERS as readonly string[]).includes(lower) && value !== undefined)
      out[lower] = Array.isArray(value) ? value.join(' ') : value;
  }
  return out;
}

/**
 * Checks a delivery against its endpoint's secret(s) (`whsec_…`; during a rotation pass the new and the old
 * one) and returns the event. `body` must be the raw body as received, not a re-serialised object.
 */
export function verifyWebhook(
  body: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string | readonly string[],
): Event {
  const payload = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const record = headerRecord(headers);
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0) throw new WebhookVerificationError('no webhook secret given');
  let failure: unknown;
  for (const candidate of secrets) {
    try {
      const event = new Webhook(candidate).verify(payload, record) as Event;
      if (typeof event !== 'object' || event === null || typeof event.type !== 'string')
        throw new WebhookVerificationError('the delivery is not an event');
      return event;
    } catch (error) {
      failure = error;
    }
  }
  if (failure instanceof WebhookVerificationError) throw failure;
  throw new WebhookVerificationError(
    `webhook verification failed: ${(failure as Error | undefined)?.message ?? 'unknown reason'}`,
    { cause: failure },
  );
}

export class Webhooks {
  /** See verifyWebhook. */
  verify(
    body: string | Uint8Array | ArrayBuffer,
    headers: WebhookHeaders,
    secret: string | readonly string[],
  ): Event {
    return verifyWebhook(body, headers, secret);
  }
}
