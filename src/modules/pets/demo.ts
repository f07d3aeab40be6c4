/** The demo pets `pet-adoption seed` adds, the same on every backend. */
import { DEFAULT_CATEGORIES } from '../categories/index.js';
import type { PetStatus } from './schemas.js';
import type { NewPetRecord } from './repository.js';

const DEMO_NAMES = ['Rex', 'Luna', 'Milo', 'Bella', 'Coco', 'Max', 'Nala', 'Oscar', 'Kiwi', 'Pepper'];

const PET_STATUS_CYCLE: PetStatus[] = ['available', 'available', 'pending', 'sold'];

/** Deterministic demo pet number i (0-based), shared by every backend's seeding. */
export function demoPet(i: number): NewPetRecord {
  return {
    name: `${DEMO_NAMES[i % DEMO_NAMES.length]} ${i + 1}`,
    categoryId: (i % DEFAULT_CATEGORIES.length) + 1,
    status: PET_STATUS_CYCLE[i % PET_STATUS_CYCLE.length]!,
  };
}
