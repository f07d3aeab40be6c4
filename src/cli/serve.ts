/** `serve`: run the HTTP service (what npm start runs). Loaded only for this command. */
import type { Command } from './common.js';
import { UsageError } from './common.js';

export const serveCommand: Command = {
  help: `Usage: pet-adoption serve

Runs the HTTP service (what npm start runs) and applies pending migrations first; a new SQLite database
is created on first start. It takes no options: it is configured by environment variables (PORT, HOST,
DATABASE_URL, REDIS_URL, METRICS_PORT, LOG_LEVEL, …; see docs/operations.md, "Configuration"), e.g.
  PORT=8080 HOST=0.0.0.0 pet-adoption serve`,
  async run(config, args) {
    // Refused rather than ignored: `serve --port 1` listening on 3000 would mislead.
    if (args.length > 0) {
      throw new UsageError(
        `serve takes no arguments, got "${args.join(' ')}"; set PORT, HOST and the rest in the environment`,
      );
    }
    const { serve } = await import('../server.js');
    await serve(config);
  },
};
