-- Every stored row fits the schema its reads are answered with (a row that does not fails to serialize).
-- A receiver answering a status line such as "HTTP/1.1 099" was recorded with that status (99, `http_99`),
-- which no delivery read accepts: such an attempt is now a `connect_failed` without a status. Any other
-- last_error outside the documented categories becomes `connect_failed` too.
UPDATE webhook_deliveries SET last_status_code = NULL, last_error = 'connect_failed'
  WHERE last_status_code IS NOT NULL
    AND (typeof(last_status_code) <> 'integer' OR last_status_code NOT BETWEEN 100 AND 999);
UPDATE webhook_deliveries SET last_error = 'connect_failed'
  WHERE last_error IS NOT NULL
    AND last_error NOT IN ('dns_failed', 'address_not_allowed', 'connect_failed', 'timeout', 'tls_failed',
      'not_authorized', 'endpoint_disabled')
    AND NOT (last_error GLOB 'http_[1-9][0-9][0-9]' AND length(last_error) = 8);
UPDATE webhook_endpoints SET disabled_reason = substr(disabled_reason, 1, 200)
  WHERE length(disabled_reason) > 200;
-- Profiles written before strings had to be well-formed may hold a lone surrogate, kept in the document as
-- an escape (`\ud800`): each becomes U+FFFD (src/db/well-formed-json.ts).
UPDATE pet_profiles SET doc = well_formed_json(doc) WHERE doc LIKE '%\ud%';
-- Their `pet.profile_updated` events carry the same escape in the payload, sent as it is to /v1/events and
-- to webhooks: repaired alike.
UPDATE events SET payload = well_formed_json(payload) WHERE payload LIKE '%\ud%';
-- A profile document that is not a JSON object cannot be read at all: the profile becomes the empty one (its
-- search columns too, so search and the document agree).
UPDATE pet_profiles SET doc = '{}', sex = NULL, age_group = NULL, size = NULL, good_children = NULL,
    good_dogs = NULL, good_cats = NULL, house_trained = NULL, special_needs = NULL, breed = NULL,
    description = NULL, latitude = NULL, longitude = NULL
  WHERE CASE WHEN json_valid(doc) THEN json_type(doc) <> 'object' ELSE 1 END;
