/** Cursors as the app over a database issues them, for tests that start a page at a chosen place. */
import { secretStore } from '../../src/db/secrets.js';
import type { Database } from '../../src/db/database.js';
import { Cursors } from '../../src/http/cursors.js';

/** The codec of an app built over `database` without CURSOR_SECRET: the database's own secret. */
export async function cursorsOf(database: Database): Promise<Cursors> {
  return new Cursors(await database.repository(secretStore).get('cursor'));
}
