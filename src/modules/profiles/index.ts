import type { ApiModule } from '../module.js';
import { profileRoutes } from './routes.js';
import { PetProfile, PetProfileChange, PetProfileInput, PetProfilePatch } from './schemas.js';

export { profileRepository } from './repository.js';
export { renderProfile } from './decisions.js';
export type { ProfileDoc, ProfileRecord, ProfileRepository } from './repository.js';
export { AGE_GROUPS, PetProfile, SEXES, SIZES } from './schemas.js';

export const profilesModule: ApiModule = {
  name: 'profiles',
  components: [PetProfile, PetProfileInput, PetProfilePatch, PetProfileChange],
  routes: profileRoutes,
  events: [
    {
      type: 'pet.profile_updated',
      object: PetProfileChange,
      describe: 'for `pet.profile_updated` the pet id and its profile',
    },
  ],
};

declare module '../module.js' {
  interface EventTypes {
    'pet.profile_updated': true;
  }
}
