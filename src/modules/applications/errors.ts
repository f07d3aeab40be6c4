/** The applications module's error codes (its `errors`); it shares orders' invalid_transition and pet_not_available. */
import { defineErrors } from '../../http/errors.js';

export const applicationErrors = defineErrors({
  application_not_found: { status: 404, message: 'No application with this id.' },
  applicant_not_found: { status: 404, message: 'No applicant with this id.' },
  consent_required: {
    status: 400,
    message:
      "An application needs the applicant's consent to data processing (consent.dataProcessing: true).",
  },
  application_exists: {
    status: 409,
    message: 'This applicant already has an open application for this pet.',
  },
  info_request_limit: {
    status: 409,
    message: 'This application has had the most requests for information it may; approve or reject it.',
  },
  open_application_limit: {
    status: 409,
    message: 'This applicant already holds the most open applications they may; one must end first.',
  },
});

export const applicationError = applicationErrors.error;
