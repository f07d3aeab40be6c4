/** The accounts module's interface for the rest of the service (it serves no routes of its own). */

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it).
export { hashApiKey, isWellFormedApiKey } from './keys.js';
export { accountRepository } from './repository.js';
export type { LiveScopes, PostgresLiveKeys, SqliteLiveKeys } from './repository.js';
export { allScopes, effectiveScopes, formatScopes, isScope, parseScopes, type Scope } from './scopes.js';
export { mintKey } from './mint.js';
export { PLANS, type Plan } from './quota.js';
