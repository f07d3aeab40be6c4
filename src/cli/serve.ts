/** `serve`: run the HTTP service (what npm start runs). Loaded only for this command. */
import type { Command } from './common.js';
import { UsageError } from './common.js';
import { tracingRequested } from '../telemetry/context.js';
import type { Tracing } from '../telemetry/start.js';
import { SERVICE_VERSION } from '../version.js';

export const serveCommand: Command = {
  help: `Usage: pet-adoption serve

Runs the HTTP service (what npm start runs) and applies pending migrations first; a new SQLite database
is created on first start. It takes no options: it is configured by environment variables (PORT, HOST,
DATABASE_URL, REDIS_URL, METRICS_PORT, LOG_LEVEL, …; see docs/operations.md, "Configuration"; tracing by
the standard OTEL_* variables, e.g. OTEL_EXPORTER_OTLP_ENDPOINT), e.g.
  PORT=8080 HOST=0.0.0.0 pet-adoption serve`,
  async run(config, args) {
    // Refused rather than ignored: `serve --port 1` listening on 3000 would mislead.
    if (args.length > 0) {
      throw new UsageError(
        `serve takes no arguments, got "${args.join(' ')}"; set PORT, HOST and the rest in the environment`,
      );
    }
    // Tracing first, when asked for: its instrumentations patch pg and ioredis as they are imported,
    // which the server does (they are imported nowhere else before this point).
    let tracing: Tracing | undefined;
    if (tracingRequested(process.env)) {
      const { startTracing } = await import('../telemetry/start.js');
      tracing = await startTracing(SERVICE_VERSION);
    }
    const { serve } = await import('../server.js');
    await serve(config, { tracing });
  },
};
