import type { ApiModule } from '../module.js';
import { petScopes } from './scopes.js';
import { petErrors } from './errors.js';
import { petRepository } from './repository.js';
import { petRoutes } from './routes.js';
import { NewPet, Pet, PetPatch } from './schemas.js';

export const petsModule: ApiModule = {
  name: 'pets',
  tag: { name: 'animals', description: 'Animals up for adoption.' },
  components: [NewPet, Pet, PetPatch],
  scopes: petScopes,
  routes: petRoutes,
  errors: petErrors.catalogue,
  // Names, categories and statuses cycle; written in bulk without events.
  seed: {
    label: 'Adding demo pets',
    help: 'N demo pets (names, categories and statuses cycle) to the existing database',
    run: ({ database, count, now, onProgress }) =>
      database.repository(petRepository).seed(count, now, onProgress),
  },
  events: [
    { type: 'pet.created', object: Pet, describe: 'a Pet' },
    { type: 'pet.updated', object: Pet },
    { type: 'pet.deleted', object: Pet, describe: 'for `pet.deleted` the pet as it was' },
  ],
};

declare module '../module.js' {
  interface EventTypes {
    'pet.created': true;
    'pet.updated': true;
    'pet.deleted': true;
  }
}

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it). The
// applications module uses pet statuses and row locks inside its transaction, and the listeners of a pet's
// removal; the orders module moves pets inside its transaction and holds the pets of its open orders.
export { PET_STATUSES, Pet, type PetStatus } from './schemas.js';
export { petError } from './errors.js';
export {
  petHolds,
  petRemovals,
  petsWithin,
  type MovedPetRow,
  type PetHold,
  type PetRemoval,
  type PetRow,
} from './within.js';
