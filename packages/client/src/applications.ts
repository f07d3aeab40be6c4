/**
 * Adoption applications (`client.applications`), the form (`client.applications.form`) and applicants'
 * personal data (`client.applicants`). The ETag of an application or of the form is remembered, so a later
 * action or change sends `If-Match` with it.
 */
import { PageIterable } from './paging.js';
import type { RequestOptions, Transport } from './transport.js';
import type {
  Applicant,
  ApplicantExport,
  Application,
  ApplicationForm,
  ApplicationFormInput,
  ApplicationPatch,
  ListApplicationsQuery,
  NewApplication,
  RejectApplication,
  WithdrawApplication,
} from './types.js';

const PAGE_SIZE = 100;

function ref(value: string): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_]{1,64}$/.test(value))
    throw new TypeError(`not an id: ${String(value)}`);
  return value;
}

export class ApplicationForms {
  constructor(private readonly transport: Transport) {}

  async get(options?: RequestOptions): Promise<ApplicationForm> {
    return (
      await this.transport.request<ApplicationForm>({
        method: 'GET',
        path: '/application-form',
        operation: 'GET /application-form',
        resource: '/application-form',
        options,
      })
    ).data;
  }

  /** A new version of the questions (`applications:manage`); sends `If-Match` with the last-seen version. */
  async put(form: ApplicationFormInput, options?: RequestOptions): Promise<ApplicationForm> {
    return (
      await this.transport.request<ApplicationForm>({
        method: 'PUT',
        path: '/application-form',
        body: form,
        operation: 'PUT /application-form',
        resource: '/application-form',
        options,
      })
    ).data;
  }
}

export class Applications {
  /** The form applications answer: `get`, `put`. */
  readonly form: ApplicationForms;

  constructor(private readonly transport: Transport) {
    this.form = new ApplicationForms(transport);
  }

  /** Applies to adopt (`applications:write`); the applicant is found again by email within the account. */
  async create(application: NewApplication, options?: RequestOptions): Promise<Application> {
    return (
      await this.transport.request<Application>({
        method: 'POST',
        path: '/applications',
        body: application,
        operation: 'POST /applications',
        resource: (created) => `/applications/${created.id}`,
        options,
      })
    ).data;
  }

  /** The account's applications (every account's with `applications:manage`), newest first by default. */
  list(query: ListApplicationsQuery = {}, options?: RequestOptions): PageIterable<Application> {
    return new PageIterable<Application>(async (next) => {
      const answer = await this.transport.request<Application[]>({
        method: 'GET',
        path: '/applications',
        url: next,
        query: next === undefined ? { limit: PAGE_SIZE, ...query } : undefined,
        operation: 'GET /applications',
        options,
      });
      return { items: answer.data, link: answer.response.headers.get('link'), url: answer.url };
    });
  }

  async get(applicationId: string, options?: RequestOptions): Promise<Application> {
    const path = `/applications/${ref(applicationId)}`;
    return (
      await this.transport.request<Application>({
        method: 'GET',
        path,
        operation: 'GET /applications/{applicationId}',
        resource: path,
        options,
      })
    ).data;
  }

  /** A JSON Merge Patch of `answers` and `applicant` (in `submitted` or `needs_info`). */
  async update(
    applicationId: string,
    patch: ApplicationPatch,
    options?: RequestOptions,
  ): Promise<Application> {
    const path = `/applications/${ref(applicationId)}`;
    return (
      await this.transport.request<Application>({
        method: 'PATCH',
        path,
        body: patch,
        contentType: 'application/merge-patch+json',
        operation: 'PATCH /applications/{applicationId}',
        resource: path,
        options,
      })
    ).data;
  }

  /** submitted → in_review (`applications:manage`). */
  review(applicationId: string, options?: RequestOptions): Promise<Application> {
    return this.act(applicationId, 'review', 'POST /applications/{applicationId}/review', undefined, options);
  }

  /** in_review → needs_info, asking the applicant for more (`applications:manage`). */
  requestInfo(applicationId: string, message: string, options?: RequestOptions): Promise<Application> {
    return this.act(
      applicationId,
      'request-info',
      'POST /applications/{applicationId}/request-info',
      { message },
      options,
    );
  }

  /** in_review → approved: the store order is placed and the pet held (`applications:manage`). */
  approve(applicationId: string, options?: RequestOptions): Promise<Application> {
    return this.act(
      applicationId,
      'approve',
      'POST /applications/{applicationId}/approve',
      undefined,
      options,
    );
  }

  /** → rejected, with a reason (`applications:manage`). */
  reject(applicationId: string, body: RejectApplication, options?: RequestOptions): Promise<Application> {
    return this.act(applicationId, 'reject', 'POST /applications/{applicationId}/reject', body, options);
  }

  /** → withdrawn; an approved application's order is cancelled with it. */
  withdraw(
    applicationId: string,
    body: WithdrawApplication = {},
    options?: RequestOptions,
  ): Promise<Application> {
    return this.act(applicationId, 'withdraw', 'POST /applications/{applicationId}/withdraw', body, options);
  }

  private async act(
    applicationId: string,
    action: string,
    operation: string,
    body: unknown,
    options?: RequestOptions,
  ): Promise<Application> {
    const resource = `/applications/${ref(applicationId)}`;
    return (
      await this.transport.request<Application>({
        method: 'POST',
        path: `${resource}/${action}`,
        ...(body === undefined ? {} : { body }),
        operation,
        resource,
        options,
      })
    ).data;
  }
}

export class Applicants {
  constructor(private readonly transport: Transport) {}

  /** The applicant as held now (`applications:manage`). */
  async get(applicantId: string, options?: RequestOptions): Promise<Applicant> {
    return (
      await this.transport.request<Applicant>({
        method: 'GET',
        path: `/applicants/${ref(applicantId)}`,
        operation: 'GET /applicants/{applicantId}',
        options,
      })
    ).data;
  }

  /** Everything held about the applicant, as one document (`applications:manage`). */
  async export(applicantId: string, options?: RequestOptions): Promise<ApplicantExport> {
    return (
      await this.transport.request<ApplicantExport>({
        method: 'GET',
        path: `/applicants/${ref(applicantId)}/export`,
        operation: 'GET /applicants/{applicantId}/export',
        options,
      })
    ).data;
  }

  /** Erases the applicant's personal data for good; repeatable (`applications:manage`). */
  async erase(applicantId: string, options?: RequestOptions): Promise<void> {
    await this.transport.request<undefined>({
      method: 'DELETE',
      path: `/applicants/${ref(applicantId)}`,
      operation: 'DELETE /applicants/{applicantId}',
      options,
    });
  }
}
