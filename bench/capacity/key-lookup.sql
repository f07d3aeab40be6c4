-- Every request on PostgreSQL: the key lookup with the page cache's read version (accounts/repository.postgres.ts).
\set k random(1, 1000)
SELECT v.version AS "readVersion", k.hash, k.id AS "keyId", k.expires_at AS "expiresAt",
    k.revoked_at AS "revokedAt", k.scopes, a.id, a.name, a.plan, a.per_minute AS "perMinute", a.per_day AS "perDay", a.ban_lifted_at AS "banLiftedAt"
  FROM (SELECT sum(version)::bigint AS version FROM read_versions) v
  LEFT JOIN (api_keys k JOIN accounts a ON a.id = k.account_id) ON k.hash = ANY(ARRAY['hash-' || :k]::text[]);
