-- placeOrder (orders/repository.postgres.ts place): a pet no order has held yet (one nextval more than the
-- service runs, to pick it), the account's lock, checks, the hold, the order, its read-back, the event.
\set acct random(1, 1000)
SELECT nextval('capacity_pet') AS pet \gset
BEGIN;
SELECT 1 FROM accounts WHERE id = :acct FOR NO KEY UPDATE;
SELECT 1 FROM pets WHERE id = :pet;
SELECT count(*)::int AS n FROM (SELECT 1 FROM orders
  WHERE account_id = :acct AND status IN ('placed', 'approved') LIMIT 5) open;
UPDATE pets SET status = 'pending', version = version + 1 WHERE id = :pet AND status = 'available'
  RETURNING id, name, category_id AS "categoryId", status, version, 'available' AS "previousStatus";
INSERT INTO orders (account_id, pet_id, status, created_at, updated_at) VALUES (:acct, :pet, 'placed', 1, 1)
  RETURNING id \gset order_
SELECT o.id, o.account_id, a.name, o.pet_id, o.status, o.version, o.created_at, o.updated_at
  FROM orders o JOIN accounts a ON a.id = o.account_id WHERE o.id = :order_id;
INSERT INTO events (id, type, account_id, payload, created_at)
  VALUES ('evt_' || md5(random()::text), 'order.placed', :acct, '{"object":{}}', 1);
COMMIT;
