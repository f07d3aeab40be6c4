/**
 * The API calls the storefront's server makes for "Apply to adopt", through the SDK with the shop's
 * applications key. The SDK's errors (PetAdoptionError: status, code, message, details) are what apply.ts
 * passes on to the page; anything else (the API unreachable) becomes its 502.
 */
import { PetAdoptionClient } from '../../packages/client/src/index.js';
import type { ApplicationsApi } from './apply.js';

export function applicationsApi(base: string, key: string): ApplicationsApi {
  // The SDK takes the service's origin; it adds /v1 itself.
  const client = new PetAdoptionClient({ apiKey: key, baseUrl: new URL(base).origin });
  return {
    form: () => client.applications.form.get(),
    submit: async (submission, idempotencyKey) => {
      const made = await client.applications.create(submission, idempotencyKey ? { idempotencyKey } : {});
      return { id: made.id, status: made.status };
    },
  };
}
