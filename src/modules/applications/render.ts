/** The API's views of the stored rows. */
import type { ApplicantRecord, ApplicationRecord, FormRecord } from './decisions.js';
import type { Applicant, Application, ApplicationForm } from './schemas.js';

const iso = (ms: number): string => new Date(ms).toISOString();

export function renderForm(form: FormRecord): ApplicationForm {
  return { version: form.version, questions: form.questions, updatedAt: iso(form.updatedAt) };
}

export function renderApplicant(applicant: ApplicantRecord): Applicant {
  const view: Applicant = {
    id: applicant.id,
    name: applicant.name,
    email: applicant.email,
    consent: { dataProcessing: applicant.erasedAt === null, at: iso(applicant.consentAt) },
    createdAt: iso(applicant.createdAt),
    erasedAt: applicant.erasedAt === null ? null : iso(applicant.erasedAt),
  };
  if (applicant.phone !== null) view.phone = applicant.phone;
  if (applicant.address !== null) view.address = applicant.address;
  return view;
}

export function renderApplication(app: ApplicationRecord, applicant: ApplicantRecord): Application {
  const view: Application = {
    id: app.id,
    petId: app.petId,
    applicantId: app.applicantId,
    applicant: renderApplicant(applicant),
    answers: app.answers ?? {},
    formVersion: app.formVersion,
    status: app.status,
    history: app.history,
    createdAt: iso(app.createdAt),
    updatedAt: iso(app.updatedAt),
  };
  if (app.statusReason !== null) view.statusReason = app.statusReason;
  if (app.message !== null) view.message = app.message;
  if (app.orderId !== null) view.orderId = app.orderId;
  return view;
}
