/** The applications module's settings (its `settings`), read by src/config.ts with the service's own. */
import { setting } from '../module.js';
import { wholeNumber } from '../setting-parsers.js';

export const DEFAULT_MAX_OPEN_APPLICATIONS = 5;
export const DEFAULT_APPLICANT_RETENTION_DAYS = 365;

export const applicationSettings = [
  setting({
    name: 'MAX_OPEN_APPLICATIONS',
    key: 'maxOpenApplications',
    default: String(DEFAULT_MAX_OPEN_APPLICATIONS),
    description:
      'Open (submitted, in_review, needs_info or approved) applications one applicant may hold at once.',
    parse: wholeNumber(DEFAULT_MAX_OPEN_APPLICATIONS, 1, 1000),
  }),
  setting({
    name: 'APPLICANT_RETENTION_DAYS',
    key: 'applicantRetentionDays',
    default: String(DEFAULT_APPLICANT_RETENTION_DAYS),
    description:
      'Days after their last application ended (without an adoption) before an applicant is erased.',
    parse: wholeNumber(DEFAULT_APPLICANT_RETENTION_DAYS, 1, 36_500),
  }),
];

declare module '../module.js' {
  interface ModuleSettings {
    /** How many open applications one applicant may hold at once. */
    maxOpenApplications: number;
    /** Days an applicant whose applications all ended without an adoption is kept. */
    applicantRetentionDays: number;
  }
}
