-- Orders move the page cache's version too (src/http/page-cache.ts; listOrders answers cached pages): an
-- approval writes the order alone, without touching its pet.
CREATE TRIGGER orders_bump_read_version
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON orders
  FOR EACH STATEMENT EXECUTE FUNCTION bump_read_version();
