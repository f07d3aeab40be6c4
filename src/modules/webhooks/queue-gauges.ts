/**
 * The webhook queue's gauges. A scrape reads the last figures in memory; the dispatcher refreshes them
 * (one query, every QUEUE_STATS_MS while it runs, and after runOnce), so a scraper polling every second,
 * or several of them, never adds queries.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../clock.js';
import type { WebhookRepository } from './repository.js';

/** How often a running dispatcher refreshes the figures: finer than any usual scrape interval. */
export const QUEUE_STATS_MS = 5_000;

export class QueueGauges {
  private pending = 0;
  private oldestCreatedAt: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly repo: Pick<WebhookRepository, 'stats'>,
    clock: Clock,
    registers: Registry[],
    private readonly onError: (err: unknown) => void,
  ) {
    // collect() is called with the gauge as `this`: the figures are read through these.
    const pending = () => this.pending;
    const oldestCreatedAt = () => this.oldestCreatedAt;
    new Gauge({
      name: 'pet_adoption_webhook_queue_depth',
      help: "Pending webhook deliveries of enabled endpoints (the dispatcher's last look, at most 5 s old).",
      registers,
      collect() {
        this.set(pending());
      },
    });
    new Gauge({
      name: 'pet_adoption_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest pending webhook delivery (0 when none).',
      registers,
      collect() {
        const oldest = oldestCreatedAt();
        this.set(oldest === null ? 0 : Math.max(0, (clock() - oldest) / 1000));
      },
    });
  }

  /** Reads the figures from the database; one query at a time however often it is asked. */
  refresh(): Promise<void> {
    this.refreshing ??= this.repo
      .stats()
      .then(({ pending, oldestCreatedAt }) => {
        this.pending = pending;
        this.oldestCreatedAt = oldestCreatedAt;
      })
      .catch(this.onError)
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  start(everyMs = QUEUE_STATS_MS): void {
    if (this.timer) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.refreshing;
  }
}
