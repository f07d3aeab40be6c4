/**
 * What a SQLite statement's span says about it (src/db/sqlite-tracing.ts), worked out from the SQL text
 * once per prepared statement: the operation of the main statement and the first table it names, in the
 * database semantic conventions' attributes. test/tracing.process.test.ts checks the spans of a real request.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeStatement } from '../src/db/sqlite-tracing.js';

test('operation and table, from the statement itself', () => {
  const cases: [string, string][] = [
    ['SELECT id, name FROM pets WHERE id > ? ORDER BY id LIMIT ?', 'SELECT pets'],
    ["SELECT 1 AS one FROM orders WHERE status IN ('placed', 'from x') LIMIT 1", 'SELECT orders'],
    ['select * from "pet profiles" where id = ?', 'SELECT pet profiles'],
    ['INSERT INTO pets (name, status) VALUES (?, ?) RETURNING id', 'INSERT pets'],
    ['INSERT OR IGNORE INTO installation (id) VALUES (1)', 'INSERT installation'],
    ['REPLACE INTO counters (k, v) VALUES (?, ?)', 'REPLACE counters'],
    ['UPDATE pets SET name = (SELECT x FROM y) WHERE id = ?', 'UPDATE pets'],
    ['UPDATE OR ROLLBACK pets SET version = version + 1', 'UPDATE pets'],
    ['DELETE FROM photos WHERE pet_id = ?', 'DELETE photos'],
    [
      '  -- a comment\n /* another */ SELECT max(version) AS v FROM schema_migrations',
      'SELECT schema_migrations',
    ],
    [
      'WITH old AS (SELECT id FROM events WHERE at < ?) DELETE FROM deliveries WHERE id IN old',
      'DELETE deliveries',
    ],
    // No table: a function, a subquery, none at all.
    ['SELECT data_version, total_changes() FROM pragma_data_version()', 'SELECT'],
    ['SELECT * FROM (SELECT 1) AS t', 'SELECT'],
    ['SELECT 1', 'SELECT'],
    ['PRAGMA wal_checkpoint(TRUNCATE)', 'PRAGMA'],
    ['', 'UNKNOWN'],
  ];
  for (const [sql, name] of cases) assert.equal(describeStatement(sql).name, name, sql);
});

test('the attributes: system, operation, table when there is one, the text with its placeholders', () => {
  const sql = 'SELECT id FROM pets WHERE status = ? LIMIT ?';
  assert.deepEqual(describeStatement(sql).attributes, {
    'db.system.name': 'sqlite',
    'db.operation.name': 'SELECT',
    'db.collection.name': 'pets',
    'db.query.text': sql,
  });
  assert.equal(describeStatement('SELECT 1').attributes['db.collection.name'], undefined);
});
