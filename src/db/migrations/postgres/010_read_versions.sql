-- The version of the pets for the exact page cache of every instance (src/http/page-cache.ts). Every
-- statement that writes pets bumps one of these counters in its own transaction, so a snapshot's sum moves
-- exactly when the pets it sees have changed; instances read the sum with each request's key lookup.
-- 32 slots, one chosen per backend process: concurrent writers on different connections do not queue on
-- one hot row (a connection runs one transaction at a time, so it never waits on itself).
CREATE TABLE read_versions (
  slot integer PRIMARY KEY,
  version bigint NOT NULL
);
INSERT INTO read_versions (slot, version) SELECT s, 0 FROM generate_series(0, 31) AS s;

-- SET search_path FROM CURRENT: the schema the migration ran in, so a write from a session with another
-- search_path (psql, an operator's script naming the schema) still finds the counters.
CREATE FUNCTION bump_read_version() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE read_versions SET version = version + 1 WHERE slot = pg_backend_pid() % 32;
  RETURN NULL;
END;
$$;

-- Per statement, not per row: a group commit or a seed of many rows bumps once per statement.
CREATE TRIGGER pets_bump_read_version
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pets
  FOR EACH STATEMENT EXECUTE FUNCTION bump_read_version();
