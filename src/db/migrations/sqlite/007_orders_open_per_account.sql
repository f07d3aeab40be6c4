-- placeOrder counts the account's open orders (MAX_OPEN_ORDERS) in its transaction: this index makes that
-- count cost the open orders only, not the account's whole history.
CREATE INDEX orders_open_per_account ON orders (account_id) WHERE status IN ('placed', 'approved');
