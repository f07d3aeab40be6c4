-- listOrders of one account, first page (orders/repository.postgres.ts list).
\set acct random(1, 1000)
SELECT o.id, o.account_id AS "accountId", a.name AS "accountName", o.pet_id AS "petId", o.status, o.version,
    o.created_at AS "createdAt", o.updated_at AS "updatedAt"
  FROM orders o JOIN accounts a ON a.id = o.account_id WHERE o.account_id = :acct ORDER BY o.id LIMIT 21;
