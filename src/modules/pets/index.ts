import type { ApiModule } from '../module.js';
import { petErrors } from './errors.js';
import { petRepository } from './repository.js';
import { petRoutes } from './routes.js';
import { NewPet, Pet, PetPatch } from './schemas.js';

export const petsModule: ApiModule = {
  name: 'pets',
  tag: { name: 'animals', description: 'Animals up for adoption.' },
  components: [NewPet, Pet, PetPatch],
  scopes: [
    { name: 'pets:read', description: 'read the animals, their categories and the inventory' },
    { name: 'pets:write', description: 'add, change and remove animals', implies: ['pets:read'] },
  ],
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

// The pets module's interface for other modules (applications): pet statuses and row locks inside their
// transaction, and the listeners of a pet's removal.
export { petRemovals, petsWithin, type PetRemoval } from './within.js';
export type { PetStatus } from './schemas.js';
