-- Adoption applications (docs/api.md, "Applications"). Personal data lives in applicants (name, email,
-- phone, address) and applications.answers/message/notes only, so erasure knows every column to clear.
-- The form: each change is a new row; the current form is the highest version.
CREATE TABLE application_forms (
  version bigint PRIMARY KEY,
  questions text NOT NULL,
  updated_at bigint NOT NULL
);
INSERT INTO application_forms (version, questions, updated_at) VALUES (1, '[{"id":"household","label":"Who lives in your household (adults, children)?","type":"text","required":true,"maxLength":1000},{"id":"home","label":"What kind of home do you live in?","type":"choice","required":true,"options":["house with garden","house","apartment","other"]},{"id":"other-pets","label":"Do you have other pets?","type":"boolean","required":true},{"id":"experience","label":"Your experience with animals","type":"text","required":false,"maxLength":2000}]', 0);
-- email_key is lower(email) until erasure (then NULL, which the unique index lets repeat).
CREATE TABLE applicants (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text NOT NULL UNIQUE,
  account_id bigint NOT NULL REFERENCES accounts(id),
  email_key text,
  name text,
  email text,
  phone text,
  address text,
  consent_at bigint NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  erased_at bigint
);
CREATE UNIQUE INDEX applicants_account_email ON applicants (account_id, email_key);
-- pet_id has no foreign key: a deleted pet's applications keep their petId (closed, pet_removed).
CREATE TABLE applications (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text NOT NULL UNIQUE,
  account_id bigint NOT NULL REFERENCES accounts(id),
  applicant_seq bigint NOT NULL REFERENCES applicants(seq),
  pet_id bigint NOT NULL,
  answers text,
  form_version bigint NOT NULL,
  status text NOT NULL CHECK (status IN ('submitted', 'in_review', 'needs_info', 'approved', 'rejected',
    'withdrawn', 'closed', 'adopted')),
  status_reason text,
  message text,
  order_id bigint,
  history text NOT NULL,
  version bigint NOT NULL DEFAULT 1,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
-- One open application per applicant and pet, whatever the race: the database refuses the second.
CREATE UNIQUE INDEX applications_one_open ON applications (applicant_seq, pet_id)
  WHERE status IN ('submitted', 'in_review', 'needs_info', 'approved');
-- Keyset pages in either direction, per filter: a page costs the same at any depth.
CREATE INDEX applications_status_seq ON applications (status, seq);
CREATE INDEX applications_account_seq ON applications (account_id, seq);
CREATE INDEX applications_account_status_seq ON applications (account_id, status, seq);
CREATE INDEX applications_pet_seq ON applications (pet_id, seq);
CREATE INDEX applications_applicant_seq ON applications (applicant_seq, seq);
CREATE INDEX applications_order ON applications (order_id) WHERE order_id IS NOT NULL;
-- Applications' lists are not served from the page cache; no read-version trigger.
