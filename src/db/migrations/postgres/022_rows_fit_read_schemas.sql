-- Every stored row fits the schema its reads are answered with (a row that does not fails to serialize).
-- A receiver answering a status line such as "HTTP/1.1 099" was recorded with that status (99, `http_99`),
-- which no delivery read accepts: such an attempt is now a `connect_failed` without a status. Any other
-- last_error outside the documented categories becomes `connect_failed` too.
UPDATE webhook_deliveries SET last_status_code = NULL, last_error = 'connect_failed'
  WHERE last_status_code IS NOT NULL AND last_status_code NOT BETWEEN 100 AND 999;
UPDATE webhook_deliveries SET last_error = 'connect_failed'
  WHERE last_error IS NOT NULL
    AND last_error !~ '^(dns_failed|address_not_allowed|connect_failed|timeout|tls_failed|http_[1-9][0-9]{2}|not_authorized|endpoint_disabled)$';
UPDATE webhook_endpoints SET disabled_reason = left(disabled_reason, 200)
  WHERE length(disabled_reason) > 200;
-- Profiles written before strings had to be well-formed may hold a lone surrogate, kept in the document as
-- an escape (`\ud800`): each becomes U+FFFD, as src/db/well-formed-json.ts does on SQLite.
UPDATE pet_profiles
  SET doc = regexp_replace(doc, '(?<!\\)((?:\\\\)*)\\u[dD][89a-fA-F][0-9a-fA-F]{2}', '\1\\ufffd', 'g')
  WHERE doc ~* '\\ud[89a-f]';
-- Their `pet.profile_updated` events carry the same escape in the payload, sent as it is to /v1/events and
-- to webhooks: repaired alike.
UPDATE events
  SET payload = regexp_replace(payload, '(?<!\\)((?:\\\\)*)\\u[dD][89a-fA-F][0-9a-fA-F]{2}', '\1\\ufffd', 'g')
  WHERE payload ~* '\\ud[89a-f]';
-- A profile document that is not a JSON object cannot be read at all: the profile becomes the empty one (its
-- search columns too, so search and the document agree).
CREATE OR REPLACE FUNCTION pg_temp.is_json_object(t text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN json_typeof(t::json) = 'object';
EXCEPTION WHEN others THEN
  RETURN false;
END $$;
UPDATE pet_profiles SET doc = '{}', sex = NULL, age_group = NULL, size = NULL, good_children = NULL,
    good_dogs = NULL, good_cats = NULL, house_trained = NULL, special_needs = NULL, breed = NULL,
    description = NULL, latitude = NULL, longitude = NULL
  WHERE NOT pg_temp.is_json_object(doc);
DROP FUNCTION pg_temp.is_json_object(text);
