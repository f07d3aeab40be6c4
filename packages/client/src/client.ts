import { Applicants, Applications } from './applications.js';
import { Listings } from './catalogue.js';
import { Categories, Events, Orders, Pets, Store, WebhookEndpoints } from './resources.js';
import type { RateLimitState } from './rate-limit.js';
import { Transport, type PetAdoptionClientOptions } from './transport.js';
import { Webhooks } from './webhooks.js';

/**
 * The Pet Adoption Service's client.
 *
 * ```ts
 * const client = new PetAdoptionClient({ apiKey: 'pas_…', baseUrl: 'http://127.0.0.1:3000' });
 * for await (const pet of client.pets.list({ status: 'available' })) console.log(pet.name);
 * ```
 */
export class PetAdoptionClient {
  readonly pets: Pets;
  readonly categories: Categories;
  readonly orders: Orders;
  readonly store: Store;
  readonly events: Events;
  readonly webhookEndpoints: WebhookEndpoints;
  readonly webhooks: Webhooks;
  /** Search the catalogue: `client.listings.search({ near, radiusKm, … })` iterates every page. */
  readonly listings: Listings;
  /** Adoption applications and their form: `create`, `list`, `get`, `update`, the actions, `form.get|put`. */
  readonly applications: Applications;
  /** Applicants' personal data: `get`, `export`, `erase`. */
  readonly applicants: Applicants;
  private readonly transport: Transport;

  constructor(options: PetAdoptionClientOptions) {
    this.transport = new Transport(options);
    this.pets = new Pets(this.transport);
    this.categories = new Categories(this.transport);
    this.orders = new Orders(this.transport);
    this.store = new Store(this.transport);
    this.events = new Events(this.transport);
    this.webhookEndpoints = new WebhookEndpoints(this.transport);
    this.webhooks = new Webhooks();
    this.listings = new Listings(this.transport);
    this.applications = new Applications(this.transport);
    this.applicants = new Applicants(this.transport);
  }

  /** The `/v1` address every request goes to. */
  get baseUrl(): string {
    return this.transport.apiBase;
  }

  /** The quota state the last answer reported (undefined before the first). */
  get rateLimit(): RateLimitState | undefined {
    return this.transport.rateLimit;
  }

  /** The ETag last seen for a resource path (`/pets/12`, `/store/orders/3`); sent as `If-Match` on its writes. */
  etagOf(resource: string): string | undefined {
    return this.transport.etagOf(resource);
  }
}
