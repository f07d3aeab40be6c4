-- The transactional outbox (DESIGN 4.4): one row per change, written in the change's transaction. `payload`
-- is the event JSON exactly as the feed serves it and receivers get it (text, not jsonb, to keep its bytes);
-- `account_id` is the order's account for order.*, NULL for pet.*. `dispatched` is flipped by the webhook
-- dispatcher only. Writers take a transaction advisory lock before inserting, so seq order is commit order
-- (see src/modules/events/repository.postgres.ts).
CREATE TABLE events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text NOT NULL UNIQUE,
  type text NOT NULL,
  account_id bigint,
  payload text NOT NULL,
  created_at bigint NOT NULL,
  dispatched integer NOT NULL DEFAULT 0
);
CREATE INDEX events_type_seq ON events (type, seq);
CREATE INDEX events_created_at ON events (created_at);
CREATE INDEX events_undispatched ON events (seq) WHERE dispatched = 0;
