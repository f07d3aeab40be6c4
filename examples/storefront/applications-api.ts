/** The API calls the storefront's server makes for "Apply to adopt", with the shop's applications key. */
import type { ApplicationsApi, Refusal } from './apply.js';

export function applicationsApi(base: string, key: string): ApplicationsApi {
  const call = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${base}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) },
    });
    const body = (await response.json()) as unknown;
    if (!response.ok) throw body as Refusal;
    return body;
  };
  return {
    form: () => call('/application-form'),
    submit: async (submission, idempotencyKey) =>
      (await call('/applications', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body: JSON.stringify(submission),
      })) as { id: string; status: string },
  };
}
