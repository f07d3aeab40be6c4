/** The webhooks scenario on PostgreSQL + Redis (same load and targets); skipped without them. */
import { webhooksScenario } from './webhooks.js';

export default webhooksScenario('postgres');
