-- Webhook endpoints and their deliveries (DESIGN 4.4). `secret` is kept readable because signing needs it;
-- after a rotation `previous_secret` signs alongside until `previous_expires_at`. `orders_manage` records
-- whether the creating key had orders:manage (it then receives every account's order.* events).
-- `failing_since` is the first failure after the last success: 3 days of it disable the endpoint.
CREATE TABLE webhook_endpoints (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret TEXT NOT NULL,
  previous_secret TEXT,
  previous_expires_at INTEGER,
  enabled INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,
  orders_manage INTEGER NOT NULL DEFAULT 0,
  failing_since INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, id);
-- One row per (endpoint, event). A pending row is due at `next_attempt_at`; while a dispatcher delivers it,
-- `lease_until` keeps others off, and a lease that expires (the process died) makes it claimable again.
CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  lease_until INTEGER,
  lease_token TEXT,
  last_status_code INTEGER,
  last_error TEXT,
  last_attempt_at INTEGER,
  created_at INTEGER NOT NULL,
  UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
