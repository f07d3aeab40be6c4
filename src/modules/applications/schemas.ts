/**
 * The applications module's shapes: `ApplicationForm`, `Applicant` and `Application` are components
 * referenced with `$ref`; the rest are route-local (bodies, query strings, path parameters).
 */
import { Type, type Static } from 'typebox';
import { IdempotencyHeaders } from '../../http/idempotency/index.js';
import { pageQuery } from '../../http/paging.js';
import { issuedId, MAX_ID, ref, timestamp } from '../../http/schemas.js';
import { MAX_TEXT_ANSWER } from './answers.js';

export const APPLICATION_STATUSES = [
  'submitted',
  'in_review',
  'needs_info',
  'approved',
  'rejected',
  'withdrawn',
  'closed',
  'adopted',
] as const;
export type ApplicationStatus = (typeof APPLICATION_STATUSES)[number];

export const ApplicationStatusSchema = Type.Unsafe<ApplicationStatus>({
  type: 'string',
  enum: [...APPLICATION_STATUSES],
  description:
    '`submitted` → `in_review` ⇄ `needs_info` → `approved` → `adopted`; `rejected`, `withdrawn`, `closed` and ' +
    '`adopted` are final (see docs/api.md, "Applications").',
  example: 'submitted',
});

export const QUESTION_TYPES = ['text', 'boolean', 'number', 'date', 'choice'] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number];
export const MAX_QUESTIONS = 50;
export { MAX_TEXT_ANSWER };

export const Question = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      maxLength: 40,
      pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$',
      description: 'A slug.',
    }),
    label: Type.String({ minLength: 1, maxLength: 200 }),
    type: Type.Unsafe<QuestionType>({ type: 'string', enum: [...QUESTION_TYPES] }),
    required: Type.Boolean(),
    options: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 20,
        description: 'The choices of a `choice` question (and only of one).',
      }),
    ),
    maxLength: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_TEXT_ANSWER,
        description: 'The longest answer to a `text` question (default 4,000).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type Question = Static<typeof Question>;

export const FormBody = Type.Object(
  { questions: Type.Array(Question, { maxItems: MAX_QUESTIONS }) },
  { additionalProperties: false, description: 'The questions of the new form version.' },
);
export type FormBody = Static<typeof FormBody>;

export const ApplicationForm = Type.Object(
  {
    version: Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'Incremented on every change.' }),
    questions: Type.Array(Question, { maxItems: MAX_QUESTIONS }),
    updatedAt: timestamp('When this version was set.'),
  },
  {
    $id: 'ApplicationForm',
    additionalProperties: false,
    example: {
      version: 1,
      questions: [
        { id: 'household', label: 'Who lives in your home?', type: 'text', required: true, maxLength: 1000 },
        { id: 'other-pets', label: 'Do you have other pets?', type: 'boolean', required: true },
      ],
      updatedAt: '2026-06-15T12:00:30.000Z',
    },
    description: 'The questions an application answers.',
  },
);
export type ApplicationForm = Static<typeof ApplicationForm>;

const Address = Type.Object(
  {
    line1: Type.String({ minLength: 1, maxLength: 200 }),
    city: Type.String({ minLength: 1, maxLength: 100 }),
    postcode: Type.String({ minLength: 1, maxLength: 20 }),
    country: Type.String({ pattern: '^[A-Z]{2}$', maxLength: 2, description: 'ISO 3166-1 alpha-2.' }),
  },
  { additionalProperties: false },
);
export type Address = Static<typeof Address>;

const name = Type.String({ minLength: 1, maxLength: 200 });
const email = Type.String({ format: 'email', minLength: 3, maxLength: 254 });
const phone = Type.String({ minLength: 1, maxLength: 40 });

export const ApplicantInput = Type.Object(
  { name, email, phone: Type.Optional(phone), address: Type.Optional(Address) },
  { additionalProperties: false },
);
export type ApplicantInput = Static<typeof ApplicantInput>;

export const ApplicantPatch = Type.Object(
  {
    name: Type.Optional(name),
    phone: Type.Optional(Type.Union([phone, Type.Null()])),
    address: Type.Optional(Type.Union([Address, Type.Null()])),
  },
  { additionalProperties: false, description: 'Merge patch: `null` removes `phone` or `address`.' },
);
export type ApplicantPatch = Static<typeof ApplicantPatch>;

export const APPLICANT_ID = '^apl_[0-9a-f]{20}$';
export const APPLICATION_ID = '^app_[0-9a-f]{20}$';

export const Applicant = Type.Object(
  {
    id: Type.String({ pattern: APPLICANT_ID, maxLength: 24, example: 'apl_0123456789abcdef0123' }),
    name: Type.Union([name, Type.Null()], { description: '`null` once erased.' }),
    email: Type.Union([email, Type.Null()], { description: '`null` once erased.' }),
    phone: Type.Optional(phone),
    address: Type.Optional(Address),
    consent: Type.Object(
      { dataProcessing: Type.Boolean(), at: timestamp('When consent was (last) given.') },
      { additionalProperties: false },
    ),
    createdAt: timestamp('When the applicant first applied.'),
    erasedAt: Type.Union([timestamp('When the personal data was erased.'), Type.Null()]),
  },
  {
    $id: 'Applicant',
    additionalProperties: false,
    description: 'A person applying to adopt.',
    example: {
      id: 'apl_0123456789abcdef0123',
      name: 'Alex Doe',
      email: 'alex@example.com',
      consent: { dataProcessing: true, at: '2026-06-15T12:00:30.000Z' },
      createdAt: '2026-06-15T12:00:30.000Z',
      erasedAt: null,
    },
  },
);
export type Applicant = Static<typeof Applicant>;

const AnswerValue = Type.Union([Type.String({ maxLength: MAX_TEXT_ANSWER }), Type.Number(), Type.Boolean()]);
const Answers = Type.Record(Type.String({ minLength: 1, maxLength: 40 }), AnswerValue, {
  maxProperties: MAX_QUESTIONS,
  description: 'Question id → answer (`date`: YYYY-MM-DD).',
});
export type Answers = Record<string, string | number | boolean>;

export const HistoryEntry = Type.Object(
  {
    status: ApplicationStatusSchema,
    at: timestamp('When.'),
    by: Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
      description:
        'The id of the API key that made the move; `"cli"` for staff using the command line, `"seed"` for demo data, `null` for automatic moves.',
    }),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
    note: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);
export type HistoryEntry = Static<typeof HistoryEntry>;

const APPLICATION_EVENT_EXAMPLE = {
  id: 'app_0123456789abcdef0123',
  petId: 42,
  applicantId: 'apl_0123456789abcdef0123',
  formVersion: 1,
  status: 'submitted',
  createdAt: '2026-06-15T12:00:30.000Z',
  updatedAt: '2026-06-15T12:00:30.000Z',
};

const applicationFields = {
  id: Type.String({ pattern: APPLICATION_ID, maxLength: 24, example: 'app_0123456789abcdef0123' }),
  petId: issuedId('The pet applied for.', 42),
  applicantId: Type.String({ pattern: APPLICANT_ID, maxLength: 24 }),
  formVersion: Type.Integer({ minimum: 1, maximum: MAX_ID }),
  status: ApplicationStatusSchema,
  statusReason: Type.Optional(Type.String({ maxLength: 500 })),
  orderId: Type.Optional(issuedId('The store order an approval placed.', 7)),
  createdAt: timestamp('When submitted.'),
  updatedAt: timestamp('When it last changed.'),
};

export const Application = Type.Object(
  {
    ...applicationFields,
    applicant: ref(Applicant),
    answers: Answers,
    message: Type.Optional(Type.String({ maxLength: 2000, description: "Staff's request for information." })),
    history: Type.Array(HistoryEntry, { maxItems: 1000 }),
  },
  {
    $id: 'Application',
    additionalProperties: false,
    description: 'An application to adopt one pet.',
    example: {
      ...APPLICATION_EVENT_EXAMPLE,
      applicant: {
        id: 'apl_0123456789abcdef0123',
        name: 'Alex Doe',
        email: 'alex@example.com',
        consent: { dataProcessing: true, at: '2026-06-15T12:00:30.000Z' },
        createdAt: '2026-06-15T12:00:30.000Z',
        erasedAt: null,
      },
      answers: { household: 'Two adults', 'other-pets': false },
      history: [{ status: 'submitted', at: '2026-06-15T12:00:30.000Z', by: null }],
    },
  },
);
export type Application = Static<typeof Application>;

/** What events and webhooks carry: ids and statuses, no personal data. */
export const ApplicationEventObject = Type.Object(applicationFields, {
  $id: 'ApplicationEventObject',
  additionalProperties: false,
  description: 'An application without its applicant, answers, message or history.',
  example: APPLICATION_EVENT_EXAMPLE,
});
export type ApplicationEventObject = Static<typeof ApplicationEventObject>;

export const ApplicantErasedObject = Type.Object(
  { id: Type.String({ pattern: APPLICANT_ID, maxLength: 24 }), erasedAt: timestamp('When erased.') },
  {
    $id: 'ApplicantErasedObject',
    additionalProperties: false,
    example: { id: 'apl_0123456789abcdef0123', erasedAt: '2026-06-15T12:00:30.000Z' },
  },
);

export const Applications = Type.Array(ref(Application), { maxItems: 100 });

export const NewApplication = Type.Object(
  {
    petId: issuedId('The pet; it must exist and not be `sold`.', 42),
    applicant: ApplicantInput,
    answers: Answers,
    consent: Type.Object({ dataProcessing: Type.Boolean() }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);
export type NewApplication = Static<typeof NewApplication>;

export const ApplicationPatch = Type.Object(
  {
    answers: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 40 }), Type.Union([AnswerValue, Type.Null()]), {
        maxProperties: MAX_QUESTIONS,
      }),
    ),
    applicant: Type.Optional(ApplicantPatch),
  },
  { additionalProperties: false, description: 'JSON Merge Patch of `answers` and `applicant`.' },
);
export type ApplicationPatch = Static<typeof ApplicationPatch>;

export const ListApplicationsQuery = Type.Object(
  {
    ...pageQuery('the same filters and sort'),
    status: Type.Optional(
      Type.String({
        pattern: `^(${APPLICATION_STATUSES.join('|')})(,(${APPLICATION_STATUSES.join('|')})){0,7}$`,
        maxLength: 100,
        description: 'Only these statuses, comma-separated.',
      }),
    ),
    petId: Type.Optional(Type.Integer({ format: 'int64', minimum: 1, maximum: MAX_ID })),
    applicantId: Type.Optional(Type.String({ pattern: APPLICANT_ID, maxLength: 24 })),
    sort: Type.Optional(Type.Unsafe<'newest' | 'oldest'>({ type: 'string', enum: ['newest', 'oldest'] })),
  },
  { additionalProperties: false },
);
export type ListApplicationsQuery = Static<typeof ListApplicationsQuery>;

export const ApplicationIdParams = Type.Object({
  applicationId: Type.String({ minLength: 1, maxLength: 64, description: 'Unknown or not yours: 404.' }),
});
export const ApplicantIdParams = Type.Object({
  applicantId: Type.String({ minLength: 1, maxLength: 64, description: 'Unknown: 404.' }),
});

export const IfMatchHeaders = Type.Object({
  ...IdempotencyHeaders.properties,
  'if-match': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'Act only at this version (`"<n>"`); stale: 412.',
    }),
  ),
});

export const REJECT_REASONS = ['unsuitable', 'incomplete', 'duplicate', 'other'] as const;
export const RequestInfoBody = Type.Object(
  { message: Type.String({ minLength: 1, maxLength: 2000 }) },
  { additionalProperties: false },
);
export const RejectBody = Type.Object(
  {
    reason: Type.Unsafe<(typeof REJECT_REASONS)[number]>({ type: 'string', enum: [...REJECT_REASONS] }),
    note: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);
export const WithdrawBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })) },
  { additionalProperties: false },
);

export const ApplicantExport = Type.Object(
  { applicant: ref(Applicant), applications: Type.Array(ref(Application), { maxItems: 10_000 }) },
  { additionalProperties: false, description: 'Everything held about one applicant.' },
);
