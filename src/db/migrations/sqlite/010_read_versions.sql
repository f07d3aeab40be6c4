-- Nothing to do on SQLite: the page cache's version there is `PRAGMA data_version` with the connection's
-- `total_changes()` (see src/modules/pets/repository.sqlite.ts). The file keeps both backends' numbering aligned.
SELECT 1;
