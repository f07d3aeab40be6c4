/**
 * The `photoUploadRss` scenario on its own, without the runner's shared 1,000,000-pet service (which the
 * runner always starts first): `npm run build && node --import tsx bench/photo-upload-rss.ts`. Prints each
 * shape's peak above idle and the worst.
 */
import { serve } from '../support/processes.js';
import type { Context } from './lib/scenario.js';
import { logFile } from './lib/service.js';
import scenario from './scenarios/photoUploadRss.js';

const log = (line: string) => console.log(line);
const ctx = {
  log,
  serve: (name: string, logName: string, env: Record<string, string>) =>
    serve(name, env, { logFile: logFile(logName) }),
} as unknown as Context;
const state = await scenario.setup(ctx);
try {
  const outcome = await scenario.measure!(ctx, state);
  log(`worst: ${outcome.row.value} (${outcome.row.note ?? ''}); failures ${outcome.failures}`);
  log(JSON.stringify(outcome.memory));
  if (outcome.failures > 0 || outcome.metrics.peakAboveIdleMb! > 256) process.exitCode = 1;
} finally {
  await scenario.teardown!(state);
}
