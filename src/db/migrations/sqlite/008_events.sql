-- The transactional outbox (DESIGN 4.4): one row per change, written in the change's transaction. `payload`
-- is the event JSON exactly as the feed serves it and receivers get it; `account_id` is the order's account
-- for order.* (who may see it), NULL for pet.*. `dispatched` is flipped by the webhook dispatcher only.
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  account_id INTEGER,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  dispatched INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_type_seq ON events (type, seq);
CREATE INDEX events_created_at ON events (created_at);
CREATE INDEX events_undispatched ON events (seq) WHERE dispatched = 0;
