-- The dispatcher claims each endpoint's due deliveries separately (a share per endpoint and per account), so
-- one endpoint's backlog never stands in front of another's: it needs the pending rows per endpoint in due
-- order. The old index ordered every endpoint's pending rows together and served only the global order.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at, id)
  WHERE status = 'pending';
