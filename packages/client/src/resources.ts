/** The resource groups: one method per operation of the service. */
import { PetPhotos, PetProfiles } from './catalogue.js';
import { PageIterable } from './paging.js';
import type { RequestOptions, Transport } from './transport.js';
import type {
  Category,
  Event,
  Inventory,
  ListEventsQuery,
  ListOrdersQuery,
  ListPetsQuery,
  ListWebhookDeliveriesQuery,
  ListWebhookEndpointsQuery,
  NewOrder,
  NewPet,
  NewWebhookEndpoint,
  Order,
  Pet,
  PetPatch,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointPatch,
  WebhookEndpointWithSecret,
} from './types.js';

/** Lists ask for the largest page unless told otherwise: fewer requests against the quota. */
const PAGE_SIZE = 100;

type ListQuery = Record<string, string | number | boolean | undefined>;

function list<T>(
  transport: Transport,
  path: string,
  operation: string,
  query: ListQuery,
  options?: RequestOptions,
  stopOnEmpty = true,
): PageIterable<T> {
  return new PageIterable<T>(async (next) => {
    const answer = await transport.request<T[]>({
      method: 'GET',
      path,
      url: next,
      query: next === undefined ? query : undefined,
      operation,
      options,
    });
    return { items: answer.data, link: answer.response.headers.get('link'), url: answer.url };
  }, stopOnEmpty);
}

function id(value: number): string {
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`not an id: ${String(value)}`);
  return String(value);
}

export class Pets {
  /** The pet's profile: `get`, `put`, `patch`. */
  readonly profile: PetProfiles;
  /** The pet's photos: `add`, `list`, `reorder`, `delete`, `download`. */
  readonly photos: PetPhotos;

  constructor(private readonly transport: Transport) {
    this.profile = new PetProfiles(transport);
    this.photos = new PetPhotos(transport);
  }

  /** Every pet (optionally of one `status`), oldest id first, following the pages. */
  list(query: ListPetsQuery = {}, options?: RequestOptions): PageIterable<Pet> {
    return list(this.transport, '/pets', 'GET /pets', { limit: PAGE_SIZE, ...query }, options);
  }

  async create(pet: NewPet, options?: RequestOptions): Promise<Pet> {
    const answer = await this.transport.request<Pet>({
      method: 'POST',
      path: '/pets',
      body: pet,
      operation: 'POST /pets',
      resource: (created) => `/pets/${created.id}`,
      options,
    });
    return answer.data;
  }

  /** `getPet` is deprecated by the service (the client warns once); `list({ status })` is its successor. */
  async get(petId: number, options?: RequestOptions): Promise<Pet> {
    const path = `/pets/${id(petId)}`;
    const answer = await this.transport.request<Pet>({
      method: 'GET',
      path,
      operation: 'GET /pets/{petId}',
      resource: path,
      options,
    });
    return answer.data;
  }

  /** A merge patch; sends `If-Match` with the pet's last-seen ETag (a stale one throws `precondition_failed`). */
  async update(petId: number, patch: PetPatch, options?: RequestOptions): Promise<Pet> {
    const path = `/pets/${id(petId)}`;
    const answer = await this.transport.request<Pet>({
      method: 'PATCH',
      path,
      body: patch,
      contentType: 'application/merge-patch+json',
      operation: 'PATCH /pets/{petId}',
      resource: path,
      options,
    });
    return answer.data;
  }

  async delete(petId: number, options?: RequestOptions): Promise<void> {
    const path = `/pets/${id(petId)}`;
    await this.transport.request<undefined>({
      method: 'DELETE',
      path,
      operation: 'DELETE /pets/{petId}',
      resource: path,
      removes: true,
      options,
    });
  }
}

export class Categories {
  constructor(private readonly transport: Transport) {}

  list(options?: RequestOptions): PageIterable<Category> {
    return list(this.transport, '/categories', 'GET /categories', {}, options);
  }
}

/** Orders move their pet's status, so the pet's remembered ETag is stale after any order change. */
const petOf = (order: Order): string[] => [`/pets/${order.petId}`];

export class Orders {
  constructor(private readonly transport: Transport) {}

  /** The account's orders (every account's with `orders:manage`), optionally filtered. */
  list(query: ListOrdersQuery = {}, options?: RequestOptions): PageIterable<Order> {
    return list(
      this.transport,
      '/store/orders',
      'GET /store/orders',
      { limit: PAGE_SIZE, ...query },
      options,
    );
  }

  async place(order: NewOrder, options?: RequestOptions): Promise<Order> {
    const answer = await this.transport.request<Order>({
      method: 'POST',
      path: '/store/orders',
      body: order,
      operation: 'POST /store/orders',
      resource: (placed) => `/store/orders/${placed.id}`,
      touches: petOf,
      options,
    });
    return answer.data;
  }

  async get(orderId: number, options?: RequestOptions): Promise<Order> {
    const path = `/store/orders/${id(orderId)}`;
    const answer = await this.transport.request<Order>({
      method: 'GET',
      path,
      operation: 'GET /store/orders/{orderId}',
      resource: path,
      options,
    });
    return answer.data;
  }

  /** placed → approved (`orders:manage`). */
  approve(orderId: number, options?: RequestOptions): Promise<Order> {
    return this.act(orderId, 'approve', options);
  }

  /** approved → delivered; the pet becomes `sold` (`orders:manage`). */
  deliver(orderId: number, options?: RequestOptions): Promise<Order> {
    return this.act(orderId, 'deliver', options);
  }

  /** placed or approved → cancelled; the pet becomes `available` again. */
  cancel(orderId: number, options?: RequestOptions): Promise<Order> {
    return this.act(orderId, 'cancel', options);
  }

  private async act(orderId: number, action: string, options?: RequestOptions): Promise<Order> {
    const resource = `/store/orders/${id(orderId)}`;
    const answer = await this.transport.request<Order>({
      method: 'POST',
      path: `${resource}/${action}`,
      operation: `POST /store/orders/{orderId}/${action}`,
      resource,
      touches: petOf,
      options,
    });
    return answer.data;
  }
}

export class Store {
  constructor(private readonly transport: Transport) {}

  /** How many pets are `available`, `pending` and `sold`. */
  async inventory(options?: RequestOptions): Promise<Inventory> {
    const answer = await this.transport.request<Inventory>({
      method: 'GET',
      path: '/store/inventory',
      operation: 'GET /store/inventory',
      options,
    });
    return answer.data;
  }
}

export class Events {
  constructor(private readonly transport: Transport) {}

  /**
   * The feed, oldest first, from `cursor` (the start of the retained feed by default). Iteration ends at
   * the first empty page; the last page's `cursor` (from `.pages()`) resumes the feed when polled later.
   */
  list(query: ListEventsQuery = {}, options?: RequestOptions): PageIterable<Event> {
    return list(this.transport, '/events', 'GET /events', { limit: PAGE_SIZE, ...query }, options);
  }
}

export class WebhookEndpoints {
  constructor(private readonly transport: Transport) {}

  /** Registers an endpoint; the answer carries its signing `secret`, shown only here. */
  async create(endpoint: NewWebhookEndpoint, options?: RequestOptions): Promise<WebhookEndpointWithSecret> {
    const answer = await this.transport.request<WebhookEndpointWithSecret>({
      method: 'POST',
      path: '/webhook-endpoints',
      body: endpoint,
      operation: 'POST /webhook-endpoints',
      options,
    });
    return answer.data;
  }

  list(query: ListWebhookEndpointsQuery = {}, options?: RequestOptions): PageIterable<WebhookEndpoint> {
    return list(
      this.transport,
      '/webhook-endpoints',
      'GET /webhook-endpoints',
      { limit: PAGE_SIZE, ...query },
      options,
    );
  }

  async get(endpointId: number, options?: RequestOptions): Promise<WebhookEndpoint> {
    const answer = await this.transport.request<WebhookEndpoint>({
      method: 'GET',
      path: `/webhook-endpoints/${id(endpointId)}`,
      operation: 'GET /webhook-endpoints/{endpointId}',
      options,
    });
    return answer.data;
  }

  /** A merge patch of `url`, `events`, `enabled`. */
  async update(
    endpointId: number,
    patch: WebhookEndpointPatch,
    options?: RequestOptions,
  ): Promise<WebhookEndpoint> {
    const answer = await this.transport.request<WebhookEndpoint>({
      method: 'PATCH',
      path: `/webhook-endpoints/${id(endpointId)}`,
      body: patch,
      contentType: 'application/merge-patch+json',
      operation: 'PATCH /webhook-endpoints/{endpointId}',
      options,
    });
    return answer.data;
  }

  async delete(endpointId: number, options?: RequestOptions): Promise<void> {
    await this.transport.request<undefined>({
      method: 'DELETE',
      path: `/webhook-endpoints/${id(endpointId)}`,
      operation: 'DELETE /webhook-endpoints/{endpointId}',
      options,
    });
  }

  /** A new signing secret; the old one keeps signing alongside it for 24 hours. */
  async rotateSecret(endpointId: number, options?: RequestOptions): Promise<WebhookEndpointWithSecret> {
    const answer = await this.transport.request<WebhookEndpointWithSecret>({
      method: 'POST',
      path: `/webhook-endpoints/${id(endpointId)}/rotate-secret`,
      operation: 'POST /webhook-endpoints/{endpointId}/rotate-secret',
      options,
    });
    return answer.data;
  }

  /** The endpoint's deliveries: status, attempts, last answer. */
  listDeliveries(
    endpointId: number,
    query: ListWebhookDeliveriesQuery = {},
    options?: RequestOptions,
  ): PageIterable<WebhookDelivery> {
    return list(
      this.transport,
      `/webhook-endpoints/${id(endpointId)}/deliveries`,
      'GET /webhook-endpoints/{endpointId}/deliveries',
      { limit: PAGE_SIZE, ...query },
      options,
    );
  }

  /** Makes a delivery pending and due now, whatever its status was. */
  async retryDelivery(
    endpointId: number,
    deliveryId: number,
    options?: RequestOptions,
  ): Promise<WebhookDelivery> {
    const answer = await this.transport.request<WebhookDelivery>({
      method: 'POST',
      path: `/webhook-endpoints/${id(endpointId)}/deliveries/${id(deliveryId)}/retry`,
      operation: 'POST /webhook-endpoints/{endpointId}/deliveries/{deliveryId}/retry',
      options,
    });
    return answer.data;
  }
}
