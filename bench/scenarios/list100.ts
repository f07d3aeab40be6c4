/** The largest page, filtered by status (the `(status, id)` index). Reported, not judged. */
import { defineScenario } from '../lib/scenario.js';

export default defineScenario({
  name: 'list100',
  label: 'GET /v1/pets?status=available&limit=100',
  order: 70,
  usesSqlite: true,
  setup: (ctx) => ctx.sqlite(),
  load: (s) => ({ pid: s.pid, url: `${s.origin}/v1/pets?status=available&limit=100`, headers: s.auth }),
});
