-- Nothing to do on SQLite: the applications' page cache version is `PRAGMA data_version` with the
-- connection's `total_changes()`, which every write moves. The file keeps both backends' numbering aligned.
SELECT 1;
