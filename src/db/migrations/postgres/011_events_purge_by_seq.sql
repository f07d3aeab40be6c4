-- Nothing to do on PostgreSQL: its purge keeps using events_created_at (SQLite dropped its copy, see
-- src/db/migrations/sqlite/011_events_purge_by_seq.sql). The file keeps both backends' numbering aligned.
SELECT 1;
