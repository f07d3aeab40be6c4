/**
 * An adoption from start to end with @pet-adoption/client: add a pet, find it among the available ones,
 * order it, approve and deliver the order, and see the pet sold.
 *
 *   npm ci && npm start                                      # the service, in one terminal
 *   npx pet-adoption keys create --account my-store          # in another: the key is the last line
 *   PET_ADOPTION_API_KEY=pas_… npx tsx packages/client/examples/adopt.ts
 *
 * PET_ADOPTION_URL (default http://127.0.0.1:3000) points it elsewhere. The key needs pets:write and
 * orders:manage (a key made without --scopes has every scope).
 */
import { PetAdoptionClient, PetAdoptionError } from '@pet-adoption/client';

const apiKey = process.env.PET_ADOPTION_API_KEY;
if (!apiKey) {
  console.error('Set PET_ADOPTION_API_KEY (npx pet-adoption keys create --account my-store prints one).');
  process.exit(2);
}
const client = new PetAdoptionClient({
  apiKey,
  baseUrl: process.env.PET_ADOPTION_URL ?? 'http://127.0.0.1:3000',
});

try {
  const pet = await client.pets.create({ name: 'Biscuit', categoryId: 1 });
  console.log(`created pet ${pet.id} (${pet.name}), ${pet.status}`);

  let found = false;
  for await (const available of client.pets.list({ status: 'available' })) {
    if (available.id === pet.id) found = true;
  }
  console.log(`listed: pet ${pet.id} is ${found ? '' : 'NOT '}among the available pets`);

  const order = await client.orders.place({ petId: pet.id });
  console.log(`placed order ${order.id} for pet ${order.petId}: ${order.status}`);
  console.log(`approved order ${order.id}: ${(await client.orders.approve(order.id)).status}`);
  console.log(`delivered order ${order.id}: ${(await client.orders.deliver(order.id)).status}`);

  for await (const sold of client.pets.list({ status: 'sold' })) {
    if (sold.id === pet.id) console.log(`pet ${sold.id} (${sold.name}) is now ${sold.status}: adopted`);
  }
  const inventory = await client.store.inventory();
  console.log(`inventory: ${JSON.stringify(inventory)}`);
} catch (error) {
  if (error instanceof PetAdoptionError) {
    console.error(`${error.status} ${error.code}: ${error.message} (request ${error.requestId})`);
    process.exit(1);
  }
  throw error;
}
