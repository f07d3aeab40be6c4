/** The webhooks scenario on PostgreSQL + Redis (same load, reported, not judged); skipped without them. */
import { webhooksScenario } from './webhooks.js';

export default webhooksScenario('postgres');
