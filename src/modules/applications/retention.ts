/**
 * APPLICANT_RETENTION_DAYS: applicants whose applications all ended without an adoption that long ago are
 * erased, hourly, in batches, by every instance (erasure is repeatable, so two instances overlapping do no harm).
 */
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import type { BackgroundContext, BackgroundTask } from '../module.js';
import { DEFAULT_APPLICANT_RETENTION_DAYS } from './settings.js';
import { applicationStore } from './factory.js';

const DAY_MS = 24 * 3600_000;
const HOUR_MS = 3600_000;
const BATCH = 100;

/** One pass: erases every applicant due at `clock()`, batch by batch; returns how many. */
export async function eraseExpiredApplicants(
  database: Database,
  retentionDays: number,
  clock: Clock = Date.now,
  busy: () => boolean = () => false,
): Promise<number> {
  const store = database.repository(applicationStore);
  let total = 0;
  for (;;) {
    const now = clock();
    const erased = await store.eraseExpired(now - retentionDays * DAY_MS, now, BATCH);
    total += erased;
    if (erased < BATCH || busy()) return total;
  }
}

export function retentionTask(context: BackgroundContext, clock: Clock = Date.now): BackgroundTask {
  const days = context.config.applicantRetentionDays ?? DEFAULT_APPLICANT_RETENTION_DAYS;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const pass = (): void => {
    running = eraseExpiredApplicants(context.database, days, clock, context.busy)
      .then((erased) => {
        if (erased > 0) context.logger.info({ erased }, 'applicants erased by retention');
      })
      .catch((error: unknown) => context.logger.warn({ err: error }, 'applicant retention failed'));
  };
  return {
    start() {
      pass();
      timer = setInterval(pass, HOUR_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
