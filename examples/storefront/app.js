/* global window, document, URL, PetAdoption */
// The storefront's script: everything it knows about the catalogue comes through the SDK's browser bundle
// (`PetAdoption`), with the demo key the example's server put in /config.js.
const { apiBase, apiKey } = window.STOREFRONT;
const client = new PetAdoption.PetAdoptionClient({ apiKey, baseUrl: apiBase });
const PAGE_SIZE = 12;

const form = document.getElementById('search');
const results = document.getElementById('results');
const status = document.getElementById('status');
const next = document.getElementById('next');
const dialog = document.getElementById('animal');
const details = document.getElementById('details');
const categories = new Map();

/** Photo URLs are root-relative unless the service has PUBLIC_URL: they live on the API's host. */
const imageUrl = (url) => new URL(url, apiBase).toString();

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** The form as a searchListings query: only what the adopter chose. */
function query() {
  const data = new window.FormData(form);
  const q = { limit: PAGE_SIZE, sort: data.get('sort') };
  const place = data.get('place');
  if (place) {
    q.near = place;
    q.radiusKm = Number(data.get('radiusKm'));
  } else if (q.sort === 'distance') q.sort = 'newest';
  for (const name of ['categoryId', 'sex', 'size', 'ageGroup']) if (data.get(name)) q[name] = data.get(name);
  for (const name of ['goodWithChildren', 'goodWithDogs', 'goodWithCats', 'hasPhotos'])
    if (data.get(name)) q[name] = 'true';
  const words = String(data.get('q') ?? '').trim();
  if (words) q.q = words;
  return q;
}

function card(listing) {
  const { pet, profile, primaryPhoto, distanceKm } = listing;
  const picture = primaryPhoto
    ? element('img', { src: imageUrl(primaryPhoto.urls.medium), alt: pet.name, loading: 'lazy' })
    : element('div', { class: 'nophoto' }, 'No photo yet');
  const facts = [profile.breed, profile.ageGroup, distanceKm === undefined ? '' : `${distanceKm} km away`];
  const node = element(
    'article',
    { class: 'card', 'data-pet-id': String(pet.id), tabindex: '0' },
    picture,
    element('h2', {}, pet.name),
    element('p', {}, facts.filter(Boolean).join(' · ')),
  );
  node.addEventListener('click', () => open(pet.id));
  return node;
}

let pages;
let shown = 0;

async function showNextPage() {
  document.body.dataset.state = 'loading';
  next.hidden = true;
  status.textContent = 'Searching…';
  try {
    const { value: page, done } = await pages.next();
    results.replaceChildren(...(done ? [] : page.items.map(card)));
    shown += done ? 0 : page.items.length;
    next.hidden = done || page.nextUrl === undefined;
    status.textContent =
      done || page.items.length === 0
        ? 'No animals match: try a wider radius or fewer filters.'
        : `${shown} animals so far`;
  } catch (error) {
    status.textContent = `The search failed: ${error.message}`;
  }
  document.body.dataset.state = 'ready';
}

function search(event) {
  event?.preventDefault();
  pages = client.listings.search(query()).pages();
  shown = 0;
  return showNextPage();
}

const yesNo = (value) => (value === true ? 'yes' : value === false ? 'no' : 'unknown');

async function open(petId) {
  document.body.dataset.state = 'loading';
  details.replaceChildren(element('p', {}, 'Loading…'));
  dialog.showModal();
  try {
    const [pet, profile, photos] = await Promise.all([
      client.pets.get(petId),
      client.pets.profile.get(petId),
      client.pets.photos.list(petId),
    ]);
    const rows = [
      ['Animal', categories.get(pet.categoryId) ?? pet.categoryId],
      ['Breed', profile.breed],
      ['Sex', profile.sex],
      ['Age', profile.ageGroup],
      ['Born', profile.birthDate],
      ['Size', profile.size],
      ['Colours', profile.colors?.join(', ')],
      ['Good with children', profile.goodWith && yesNo(profile.goodWith.children)],
      ['Good with dogs', profile.goodWith && yesNo(profile.goodWith.dogs)],
      ['Good with cats', profile.goodWith && yesNo(profile.goodWith.cats)],
      ['House-trained', profile.houseTrained === undefined ? undefined : yesNo(profile.houseTrained)],
      ['Special needs', profile.specialNeeds === undefined ? undefined : yesNo(profile.specialNeeds)],
      ['Where', profile.location?.postalCode],
    ].filter(([, value]) => value !== undefined && value !== null);
    details.replaceChildren(
      element('h2', {}, pet.name),
      element(
        'div',
        { class: 'photos' },
        ...photos.map((photo) => element('img', { src: imageUrl(photo.urls.large), alt: pet.name })),
      ),
      element('p', {}, profile.description ?? ''),
      element(
        'dl',
        {},
        ...rows.flatMap(([name, value]) => [element('dt', {}, name), element('dd', {}, String(value))]),
      ),
    );
    if (pet.status !== 'sold') {
      // The form and the submission go through this shop's own server (apply-form.js).
      const apply = element('section', { id: 'apply' });
      const button = element('button', { type: 'button', id: 'apply-open' }, 'Apply to adopt');
      button.addEventListener('click', () => window.ApplyForm.open(apply, pet));
      apply.append(button);
      details.append(apply);
    } else details.append(element('p', { class: 'adopted' }, `${pet.name} has found a home.`));
  } catch (error) {
    details.replaceChildren(element('p', {}, `Could not load this animal: ${error.message}`));
  }
  document.body.dataset.state = 'ready';
}

async function start() {
  try {
    const select = form.elements.categoryId;
    for await (const category of client.categories.list()) {
      categories.set(category.id, category.name);
      select.append(element('option', { value: String(category.id) }, category.name));
    }
  } catch {
    // Categories only fill the filter; the search works without them.
  }
  form.addEventListener('submit', search);
  next.addEventListener('click', showNextPage);
  document.getElementById('close').addEventListener('click', () => dialog.close());
  await search();
}

start();
