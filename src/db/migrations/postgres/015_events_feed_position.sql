-- The feed's order without a lock held through every writer's commit (docs/decisions.md, "Events feed on
-- PostgreSQL"). Writers insert events with a NULL position; a publisher, after they commit, numbers every
-- committed unnumbered event in one short transaction (publish_events below), and the feed pages by
-- position. seq stays the insert order: it orders the events of one pass, and the webhook fan-out uses it.
--
-- Every cursor already handed out is a seq of the old order, in which seq was commit order: existing events
-- keep it as their position, and the publisher numbers on from the largest, so old cursors stay valid.
ALTER TABLE events ADD COLUMN position bigint;
UPDATE events SET position = seq;
CREATE UNIQUE INDEX events_position ON events (position);
CREATE INDEX events_type_position ON events (type, position);
DROP INDEX events_type_seq;
-- What the publisher looks for: small, since events leave it once numbered.
CREATE INDEX events_unpublished ON events (seq) WHERE position IS NULL;

-- The last position handed out. Its row lock is the publisher's lock: passes of every instance queue on it,
-- and nothing else ever takes it.
CREATE TABLE events_feed (
  id integer PRIMARY KEY CHECK (id = 1),
  last_position bigint NOT NULL
);
INSERT INTO events_feed (id, last_position) SELECT 1, coalesce(max(seq), 0) FROM events;

-- One publisher pass; returns how many events it numbered. Called as one statement, so it is one
-- transaction, and plpgsql gives each statement below a snapshot of its own: the numbering reads after the
-- lock is granted, i.e. after the previous pass committed, and sees every event committed before that.
-- An uncommitted event is invisible to it and is numbered by a later pass, above everything numbered now:
-- no event can commit under a position a reader has already seen. Events of one pass are numbered in insert
-- order (seq): two writes of one pet hold its row lock in turn, so the later one's event has the larger seq
-- and is numbered in the same pass after the earlier one, or in a later pass.
-- SET search_path FROM CURRENT, as for bump_read_version (010): a pass run from a session with another
-- search_path still numbers this schema's events.
CREATE FUNCTION publish_events(max_rows integer) RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  last bigint;
  numbered integer;
BEGIN
  -- Nothing to number: no lock, no write, no commit to flush (readers and the dispatcher call this often).
  IF NOT EXISTS (SELECT 1 FROM events WHERE position IS NULL) THEN
    RETURN 0;
  END IF;
  SELECT last_position INTO last FROM events_feed WHERE id = 1 FOR UPDATE;
  WITH todo AS (
    SELECT seq, last + row_number() OVER (ORDER BY seq) AS position
    FROM events WHERE position IS NULL ORDER BY seq LIMIT max_rows
  ), done AS (
    UPDATE events e SET position = todo.position FROM todo WHERE e.seq = todo.seq RETURNING e.position
  )
  SELECT count(*), max(position) INTO numbered, last FROM done;
  IF numbered > 0 THEN
    UPDATE events_feed SET last_position = last WHERE id = 1;
  END IF;
  RETURN numbered;
END
$$;
