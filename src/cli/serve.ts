/** `serve`: run the HTTP service (what npm start runs). Loaded only for this command. */
import type { Config } from '../config.js';

export async function serveCommand(config: Config): Promise<void> {
  const { serve } = await import('../server.js');
  await serve(config);
}
