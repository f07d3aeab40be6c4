-- Webhook endpoints: what they may receive, and how many an account may hold.
-- `granted_scopes` is the effective scope list of the key that created the endpoint or last changed its url or
-- events (space-separated, as on keys): an endpoint never receives more than that key could read, nor more
-- than the account's live keys can read now. NULL (endpoints made before this column): only the live keys bound it.
ALTER TABLE webhook_endpoints ADD COLUMN granted_scopes TEXT;
-- One URL once per account. Earlier releases accepted duplicates: the oldest keeps the URL, the later ones are
-- disabled and their URL marked with a fragment (not sent over HTTP) so the account can see and delete them.
UPDATE webhook_endpoints
SET url = url || '#duplicate-' || id, enabled = 0,
  disabled_reason = 'another endpoint of this account has the same URL; delete this one or change its URL'
WHERE EXISTS (
  SELECT 1 FROM webhook_endpoints o
  WHERE o.account_id = webhook_endpoints.account_id AND o.url = webhook_endpoints.url AND o.id < webhook_endpoints.id
);
CREATE UNIQUE INDEX webhook_endpoints_account_url ON webhook_endpoints (account_id, url);
-- A delivery's last_error is a category; earlier releases stored resolver and socket messages, which named
-- internal addresses.
UPDATE webhook_deliveries SET last_error = CASE
    WHEN last_error LIKE 'the receiver answered %' THEN 'http_' || substr(last_error, 23)
    WHEN last_error LIKE 'could not resolve %' OR last_error LIKE '% resolves to no address' THEN 'dns_failed'
    WHEN last_error LIKE 'refused: %' THEN 'address_not_allowed'
    WHEN last_error LIKE 'no answer within %' THEN 'timeout'
    WHEN last_error = 'endpoint disabled' THEN 'endpoint_disabled'
    ELSE 'connect_failed'
  END
WHERE last_error IS NOT NULL;
