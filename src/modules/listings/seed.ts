/**
 * Demo catalogue for `pet-adoption seed`: a profile for every new pet (breed, age, size, what it gets on
 * with, a location around one of a country's cities) and generated photos for some of them, so that a
 * newcomer's first search near a city shows animals with pictures. Written through the profiles' and
 * photos' own repositories, as the API writes them.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from '../../db/database.js';
import { loadSharp, processUpload } from '../photos/index.js';
import { photoRepository } from '../photos/index.js';
import { MAX_PHOTOS } from '../photos/index.js';
import { profileRepository } from '../profiles/index.js';
import type { ProfileDoc } from '../profiles/index.js';
import { AGE_GROUPS, SEXES, SIZES } from '../profiles/index.js';
import { listingRepository } from './repository.js';

/** Cities of Germany (latitude, longitude, a postal code); pets are spread up to ~40 km around them. */
const CITIES: [string, number, number, string][] = [
  ['Berlin', 52.52, 13.405, '10115'],
  ['Hamburg', 53.551, 9.994, '20095'],
  ['München', 48.137, 11.575, '80331'],
  ['Köln', 50.938, 6.96, '50667'],
  ['Frankfurt am Main', 50.11, 8.682, '60311'],
  ['Stuttgart', 48.776, 9.183, '70173'],
  ['Düsseldorf', 51.227, 6.773, '40213'],
  ['Leipzig', 51.34, 12.375, '04109'],
  ['Dresden', 51.05, 13.738, '01067'],
  ['Hannover', 52.375, 9.732, '30159'],
  ['Nürnberg', 49.452, 11.077, '90402'],
  ['Bremen', 53.079, 8.802, '28195'],
];
const BREEDS: Record<number, string[]> = {
  1: ['Labrador Retriever', 'German Shepherd', 'Beagle', 'Dachshund', 'Mixed breed', 'Border Collie'],
  2: ['European Shorthair', 'Maine Coon', 'Siamese', 'Persian', 'Mixed breed'],
  3: ['Budgerigar', 'Cockatiel', 'Canary'],
  4: ['Holland Lop', 'Lionhead', 'Rex'],
  5: ['Guinea pig', 'Hamster', 'Chinchilla'],
  6: ['Bearded dragon', 'Leopard gecko', 'Corn snake'],
  7: ['Goldfish', 'Betta', 'Guppy'],
};
const TRAITS = [
  'calm',
  'playful',
  'curious',
  'gentle',
  'energetic',
  'shy at first',
  'affectionate',
  'clever',
];
const COLORS = ['black', 'white', 'brown', 'grey', 'ginger', 'cream', 'spotted', 'tabby'];
const HUES = ['#c0392b', '#2980b9', '#27ae60', '#8e44ad', '#d35400', '#16a085', '#7f8c8d', '#f39c12'];

/** A small deterministic generator per pet, so the same seed gives the same catalogue. */
function random(seed: number): () => number {
  let state = (seed * 2654435761) >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
}
const pick = <T>(next: () => number, items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
const tri = (next: () => number): boolean | null => {
  const r = next();
  return r < 0.55 ? true : r < 0.8 ? false : null;
};

export function demoProfile(petId: number, categoryId: number, today: number): ProfileDoc {
  const next = random(petId);
  const [city, lat, lon, postalCode] = pick(next, CITIES);
  // Up to ~40 km from the centre, denser near it.
  const distance = 0.36 * Math.sqrt(next());
  const angle = next() * 2 * Math.PI;
  const latitude = Math.round((lat + distance * Math.cos(angle)) * 1e5) / 1e5;
  const longitude =
    Math.round((lon + (distance * Math.sin(angle)) / Math.cos((lat * Math.PI) / 180)) * 1e5) / 1e5;
  const breed = pick(next, BREEDS[categoryId] ?? BREEDS[1]!);
  const ageGroup = pick(next, AGE_GROUPS);
  const years = { baby: 0, young: 1, adult: 4, senior: 10 }[ageGroup] + Math.floor(next() * 3);
  const birth = new Date(today - years * 365.25 * 86_400_000 - Math.floor(next() * 300) * 86_400_000);
  const traits = [pick(next, TRAITS), pick(next, TRAITS)];
  return {
    description: `A ${traits[0]} and ${traits[1]} ${breed.toLowerCase()} waiting near ${city} for a new home.`,
    breed,
    sex: pick(next, SEXES.slice(0, 2)),
    ageGroup,
    birthDate: birth.toISOString().slice(0, 10),
    size: pick(next, SIZES),
    colors: [pick(next, COLORS)],
    goodWith: { children: tri(next), dogs: tri(next), cats: tri(next) },
    houseTrained: tri(next),
    specialNeeds: next() < 0.1,
    location: { postalCode, latitude, longitude },
  };
}

/** A generated picture: a coloured background with a lighter disc, a different hue per pet. */
async function demoImage(petId: number, n: number): Promise<Buffer> {
  const hue = HUES[(petId + n) % HUES.length]!;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600">
    <rect width="800" height="600" fill="${hue}"/>
    <circle cx="${300 + ((petId * 37) % 200)}" cy="300" r="180" fill="#ffffff" fill-opacity="0.35"/>
    <circle cx="${250 + ((petId * 53) % 300)}" cy="260" r="60" fill="#ffffff" fill-opacity="0.5"/></svg>`;
  const vips = await loadSharp();
  return vips(Buffer.from(svg)).jpeg({ quality: 80 }).toBuffer();
}

export interface SeedCatalogueOptions {
  /** How many of the pets get photos (two each), from the newest; the rest get none. */
  withPhotos: number;
  now: number;
  onProgress?: (done: number) => void;
}

/**
 * Profiles for the `count` newest pets (one that has a profile already keeps it) and photos for some of them;
 * returns how many photos were added.
 */
export async function seedCatalogue(
  database: Database,
  count: number,
  options: SeedCatalogueOptions,
): Promise<number> {
  const listings = database.repository(listingRepository);
  const profiles = database.repository(profileRepository);
  const photos = database.repository(photoRepository);
  const pets = await listings.search({
    status: ['available', 'pending', 'sold'],
    booleans: {},
    sort: 'newest',
    limit: count - 1,
    filters: {},
  });
  let done = 0;
  let added = 0;
  for (let i = 0; i < pets.length; i += 10_000) {
    const chunk = pets.slice(i, i + 10_000);
    await profiles.seed(
      chunk.map((pet) => ({ petId: pet.id, doc: demoProfile(pet.id, pet.categoryId, options.now) })),
      options.now,
    );
    done += chunk.length;
    options.onProgress?.(done);
  }
  await listings.refreshStatistics();
  // The photos of the newest pets, a few at a time (the image work runs on libuv's thread pool).
  for (let i = 0; i < Math.min(options.withPhotos, pets.length); i += 8) {
    await Promise.all(
      pets.slice(i, Math.min(i + 8, options.withPhotos)).map(async (pet) => {
        for (let n = 0; n < 2 && n < MAX_PHOTOS; n++) {
          const original = await demoImage(pet.id, n);
          const processed = await processUpload(original, 'image/jpeg');
          const result = await photos.add({
            id: randomBytes(16).toString('base64url'),
            petId: pet.id,
            width: processed.width,
            height: processed.height,
            original: processed.original,
            files: processed.files,
            now: options.now,
            max: MAX_PHOTOS,
          });
          if (result.kind === 'added') added++;
        }
      }),
    );
  }
  return added;
}
