/**
 * The public shapes, named after the document's schemas and operations so a change in the service's
 * document changes them (and breaks the client's compile) rather than drifting silently.
 */
import type { components, operations } from './generated/openapi.js';

type Schemas = components['schemas'];

export type Pet = Schemas['Pet'];
export type NewPet = Schemas['NewPet'];
export type PetPatch = Schemas['PetPatch'];
export type PetStatus = Pet['status'];
export type Category = Schemas['Category'];
export type Order = Schemas['Order'];
export type OrderStatus = Order['status'];
export type Event = Schemas['Event'];
export type EventType = Event['type'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type NewWebhookEndpoint = Schemas['NewWebhookEndpoint'];
export type WebhookEndpointPatch = Schemas['WebhookEndpointPatch'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type ErrorBody = Schemas['Error'];

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type Query<Id extends keyof operations> = operations[Id]['parameters'] extends { query?: infer Q }
  ? NonNullable<Q>
  : never;

/** A created endpoint or a rotated secret: the endpoint with its signing `secret` (shown only then). */
export type WebhookEndpointWithSecret = JsonOf<operations['createWebhookEndpoint']['responses'][201]>;
export type Inventory = JsonOf<operations['getInventory']['responses'][200]>;
export type NewOrder = NonNullable<operations['placeOrder']['requestBody']>['content']['application/json'];

export type ListPetsQuery = Query<'listPets'>;
export type ListOrdersQuery = Query<'listOrders'>;
export type ListEventsQuery = Query<'listEvents'>;
export type ListWebhookEndpointsQuery = Query<'listWebhookEndpoints'>;
export type ListWebhookDeliveriesQuery = Query<'listWebhookDeliveries'>;

export type PetProfile = Schemas['PetProfile'];
export type PetProfileInput = Schemas['PetProfileInput'];
export type PetProfilePatch = Schemas['PetProfilePatch'];
export type Photo = Schemas['Photo'];
export type PhotoSize = keyof Photo['urls'];
export type Listing = Schemas['Listing'];
export type SearchListingsQuery = Query<'searchListings'>;

export type ApplicationForm = Schemas['ApplicationForm'];
export type Application = Schemas['Application'];
export type ApplicationStatus = Application['status'];
export type Applicant = Schemas['Applicant'];
type Body<Id extends keyof operations> =
  NonNullable<operations[Id]['requestBody']> extends { content: { 'application/json': infer B } } ? B : never;
export type NewApplication = Body<'createApplication'>;
export type ApplicationPatch = Body<'updateApplication'>;
export type ApplicationFormInput = Body<'putApplicationForm'>;
export type RejectApplication = Body<'rejectApplication'>;
export type WithdrawApplication = Body<'withdrawApplication'>;
export type ApplicantExport = JsonOf<operations['exportApplicant']['responses'][200]>;
export type ListApplicationsQuery = Query<'listApplications'>;
