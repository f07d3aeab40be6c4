/**
 * Demo applications for `pet-adoption seed`: a few people applying for the newest available pets, taken to
 * every step of the workflow through the applications' own store (and an adoption through the orders'), as
 * the API would, events included, so a first look at the queue shows what each status means. The same
 * calls on either backend give the same applications.
 */
import type { Database } from '../../db/database.js';
import { accountRepository } from '../accounts/index.js';
import { listingRepository } from '../listings/index.js';
import { orderRepository } from '../orders/index.js';
import type { Action, Actor } from './decisions.js';
import { applicationStore } from './factory.js';
import type { Answers, ApplicationStatus, Question } from './schemas.js';
import type { ApplicationStore, FullApplication } from './store.js';

/** The account the demo applications come from, as if through a partner's site. */
export const DEMO_ACCOUNT = 'demo-partner';
/** What the history names as the mover of the seed's steps. */
const SEED_ACTOR = 'seed';
type Person =
  'Mara Klein' | 'Jonas Weber' | 'Lea Hoffmann' | 'Tobias Schulz' | 'Sophie Wagner' | 'Felix Becker';

/**
 * Who applies for which of the six pets, and the steps staff took; applications listed in this order are
 * submitted in it (Jonas applies for the fifth pet before Sophie's adoption closes his application).
 */
const PLAN: { pet: number; person: Person; steps: Step[] }[] = [
  { pet: 0, person: 'Mara Klein', steps: [] },
  { pet: 1, person: 'Jonas Weber', steps: [{ action: 'review' }] },
  {
    pet: 2,
    person: 'Lea Hoffmann',
    steps: [
      { action: 'review' },
      { action: 'request-info', message: 'Could you tell us how high the fence around your garden is?' },
    ],
  },
  { pet: 3, person: 'Tobias Schulz', steps: [{ action: 'review' }, { action: 'approve' }] },
  { pet: 3, person: 'Mara Klein', steps: [] },
  { pet: 4, person: 'Jonas Weber', steps: [] },
  { pet: 4, person: 'Sophie Wagner', steps: [{ action: 'review' }, { action: 'approve' }, 'adopt'] },
  {
    pet: 5,
    person: 'Felix Becker',
    steps: [
      { action: 'reject', reason: 'incomplete', note: 'No answer about the household after two weeks.' },
    ],
  },
];
type Step = { action: Action; message?: string; reason?: string; note?: string } | 'adopt';
const PETS_NEEDED = 6;

/** A plausible answer to each question of the form in force, whatever it asks. */
function answersFor(questions: readonly Question[], index: number): Answers {
  const answers: Answers = {};
  for (const q of questions) {
    switch (q.type) {
      case 'text':
        answers[q.id] = ['Two adults and a child of eight', 'Just me', 'My partner and I'][index % 3]!.slice(
          0,
          q.maxLength ?? 4000,
        );
        break;
      case 'boolean':
        answers[q.id] = index % 2 === 0;
        break;
      case 'number':
        answers[q.id] = 1 + (index % 4);
        break;
      case 'date':
        answers[q.id] = `2027-0${1 + (index % 9)}-15`;
        break;
      case 'choice':
        answers[q.id] = q.options![index % q.options!.length]!;
        break;
    }
  }
  return answers;
}

const emailOf = (person: Person, tag: number) =>
  `${person.toLowerCase().replace(' ', '.')}+${tag}@example.org`;

async function take(
  store: ApplicationStore,
  id: string,
  step: Exclude<Step, 'adopt'>,
  actor: Actor,
  now: number,
): Promise<FullApplication> {
  const result = await store.act({ id, request: { ...step, actor, now } });
  if (result.kind !== 'done') {
    throw new Error(`the demo application could not take "${step.action}" (${result.kind})`);
  }
  return result.application;
}

/**
 * Adds the demo applications for the six newest available pets (none when fewer are available); returns how
 * many were added with the status each reached.
 */
export async function seedApplications(database: Database, now: number): Promise<ApplicationStatus[]> {
  const pets = await database.repository(listingRepository).search({
    status: ['available'],
    booleans: {},
    sort: 'newest',
    limit: PETS_NEEDED,
    filters: {},
  });
  if (pets.length < PETS_NEEDED) return [];
  const accounts = database.repository(accountRepository);
  const account =
    (await accounts.findAccount(DEMO_ACCOUNT)) ??
    (await accounts.upsertAccount({ name: DEMO_ACCOUNT, plan: 'free' }, now));
  const store = database.repository(applicationStore);
  const orders = database.repository(orderRepository);
  const form = await store.form();
  const actor: Actor = { keyId: SEED_ACTOR, accountId: account.id, manager: true };
  const ids: string[] = [];
  // The newest pet's id tags the addresses, so a second seed makes new applicants instead of exceeding
  // the first ones' limit of open applications.
  const tag = pets[0]!.id;
  const HOUR = 3_600_000;
  for (const [index, { pet, person, steps }] of PLAN.entries()) {
    const petId = pets[pet]!.id;
    // Spread over the last days, each step a few hours after the one before, as a real queue would be.
    let at = now - (PLAN.length - index) * 24 * HOUR;
    const submitted = await store.submit({
      accountId: account.id,
      petId,
      applicant: { name: person, email: emailOf(person, tag), phone: `+49 30 555 01${index}` },
      answers: answersFor(form.questions, index),
      keyId: SEED_ACTOR,
      max: PLAN.length,
      now: at,
    });
    if (submitted.kind !== 'done') throw new Error(`a demo application was refused (${submitted.kind})`);
    let application = submitted.application;
    for (const step of steps) {
      at += 3 * HOUR;
      if (step === 'adopt') {
        // The adoption is the delivery of the order the approval placed; the applications follow it.
        for (const action of ['approve', 'deliver'] as const) {
          const moved = await orders.transition({ id: application.application.orderId!, action, now: at });
          if (moved.kind !== 'done')
            throw new Error(`the demo order could not be ${action}d (${moved.kind})`);
        }
        continue;
      }
      application = await take(store, application.application.id, step, actor, at);
    }
    ids.push(application.application.id);
  }
  // Read back: the adoption also closed the other application for its pet.
  return Promise.all(ids.map(async (id) => (await store.get(id))!.application.status));
}
