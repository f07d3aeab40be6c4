-- Events are purged as the prefix of the seq order older than the cutoff (src/modules/events/repository.sqlite.ts):
-- an index on created_at cost every event an insert into it and was only ever read by the daily purge.
DROP INDEX events_created_at;
