-- Webhook endpoints and their deliveries (DESIGN 4.4). `secret` is kept readable because signing needs it;
-- after a rotation `previous_secret` signs alongside until `previous_expires_at`. `orders_manage` records
-- whether the creating key had orders:manage (it then receives every account's order.* events).
-- `failing_since` is the first failure after the last success: 3 days of it disable the endpoint.
CREATE TABLE webhook_endpoints (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES accounts(id),
  url text NOT NULL,
  events text NOT NULL,
  secret text NOT NULL,
  previous_secret text,
  previous_expires_at bigint,
  enabled integer NOT NULL DEFAULT 1,
  disabled_reason text,
  orders_manage integer NOT NULL DEFAULT 0,
  failing_since bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, id);
-- One row per (endpoint, event). A pending row is due at `next_attempt_at`; while a dispatcher delivers it,
-- `lease_until` keeps others off, and a lease that expires (the process died) makes it claimable again.
CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id bigint NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id text NOT NULL,
  event_type text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint,
  lease_until bigint,
  lease_token text,
  last_status_code integer,
  last_error text,
  last_attempt_at bigint,
  created_at bigint NOT NULL,
  UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
