/** What a WebhookDispatcher is given (src/server.ts through the module's background task, and tests). */
import type { Registry } from 'prom-client';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import type { SendOptions } from './delivery.js';
import type { AttemptOutcome } from './repository.js';

export interface DispatcherLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface DispatcherOptions {
  database: Database;
  allowHosts: readonly string[];
  /** How often to look for due work when nothing wakes the dispatcher. */
  pollMs: number;
  clock?: Clock;
  concurrency?: number;
  /**
   * True while API requests keep the event loop busy (server.ts: src/http/api-load.ts): deliveries then
   * start at most BUSY_CONCURRENCY at a time (one per endpoint), and events are fanned out
   * BUSY_FAN_OUT_BATCH per pass, so background work gives the event loop back to API answers (the promise:
   * webhooks never delay them) and still makes progress; the backlog drains at full concurrency once the
   * load eases.
   */
  busy?: () => boolean;
  perEndpoint?: number;
  /** Deliveries in flight per account (default: half of `concurrency`, at least `perEndpoint`). */
  perAccount?: number;
  timeoutMs?: number;
  leaseMs?: number;
  /** Where the metrics go (the app's /metrics registry); a private one if omitted. */
  registry?: Registry;
  logger?: DispatcherLogger;
  /** The jitter's randomness (tests pin it). */
  random?: () => number;
  /** Test seam: name resolution for the SSRF check. */
  resolve?: SendOptions['resolve'];
  /** Called once a batch of attempts is on record (committed), with their outcomes: tests wait on it. */
  onRecorded?: (outcomes: readonly AttemptOutcome['kind'][]) => void;
}
