-- Applications' lists answer from the page cache (src/http/page-cache.ts), as the pets' and orders' do: every
-- statement writing applications moves its version (010, 012), and so does every statement writing
-- applicants, whose names and emails each page shows (an erasure must never be answered around).
CREATE TRIGGER applications_bump_read_version
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON applications
  FOR EACH STATEMENT EXECUTE FUNCTION bump_read_version();
CREATE TRIGGER applicants_bump_read_version
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON applicants
  FOR EACH STATEMENT EXECUTE FUNCTION bump_read_version();
