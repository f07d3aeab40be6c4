/** The catalogue: a pet's profile and photos (`client.pets.profile`, `client.pets.photos`) and search. */
import { PageIterable } from './paging.js';
import type { RequestOptions, Transport } from './transport.js';
import type {
  Listing,
  PetProfile,
  PetProfileInput,
  PetProfilePatch,
  Photo,
  PhotoSize,
  SearchListingsQuery,
} from './types.js';

function id(value: number): string {
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`not an id: ${String(value)}`);
  return String(value);
}

export class PetProfiles {
  constructor(private readonly transport: Transport) {}

  /** The profile (`{ updatedAt: null }` for a pet without one); its ETag is remembered for the writes. */
  async get(petId: number, options?: RequestOptions): Promise<PetProfile> {
    const path = `/pets/${id(petId)}/profile`;
    return (
      await this.transport.request<PetProfile>({
        method: 'GET',
        path,
        operation: 'GET /pets/{petId}/profile',
        resource: path,
        options,
      })
    ).data;
  }

  /** Replaces the whole profile; sends `If-Match` with the profile's last-seen ETag. */
  async put(petId: number, profile: PetProfileInput, options?: RequestOptions): Promise<PetProfile> {
    const path = `/pets/${id(petId)}/profile`;
    return (
      await this.transport.request<PetProfile>({
        method: 'PUT',
        path,
        body: profile,
        operation: 'PUT /pets/{petId}/profile',
        resource: path,
        options,
      })
    ).data;
  }

  /** A JSON Merge Patch (`null` removes a field); sends `If-Match` with the last-seen ETag. */
  async patch(petId: number, patch: PetProfilePatch, options?: RequestOptions): Promise<PetProfile> {
    const path = `/pets/${id(petId)}/profile`;
    return (
      await this.transport.request<PetProfile>({
        method: 'PATCH',
        path,
        body: patch,
        contentType: 'application/merge-patch+json',
        operation: 'PATCH /pets/{petId}/profile',
        resource: path,
        options,
      })
    ).data;
  }
}

/** An image to upload: bytes, a Blob (a browser File), or a stream of bytes (Node or web). */
export type ImageSource =
  Uint8Array | ArrayBuffer | Blob | AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

const TYPES: Record<string, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

/** The image's media type from its first bytes (JPEG, PNG or WebP), so a caller need not say it. */
function sniff(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return TYPES.jpeg;
  if (bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) return TYPES.png;
  const text = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (text(0, 4) === 'RIFF' && text(8, 12) === 'WEBP') return TYPES.webp;
  return undefined;
}

/** The whole image in memory (at most 10 MiB is accepted): a retry must be able to send it again. */
async function bytesOf(source: ImageSource): Promise<Uint8Array> {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (typeof Blob !== 'undefined' && source instanceof Blob)
    return new Uint8Array(await source.arrayBuffer());
  const chunks: Uint8Array[] = [];
  const iterable: AsyncIterable<Uint8Array> =
    Symbol.asyncIterator in (source as object)
      ? (source as AsyncIterable<Uint8Array>)
      : readAll(source as ReadableStream<Uint8Array>);
  for await (const chunk of iterable) chunks.push(chunk);
  const all = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.length;
  }
  return all;
}

async function* readAll(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

export class PetPhotos {
  constructor(private readonly transport: Transport) {}

  /**
   * Uploads an image (JPEG, PNG or WebP, at most 10 MiB and 50 megapixels). Its type is taken from
   * `contentType`, a Blob's type, or the bytes themselves.
   */
  async add(
    petId: number,
    image: ImageSource,
    options?: RequestOptions & { contentType?: string },
  ): Promise<Photo> {
    const bytes = await bytesOf(image);
    const blobType = typeof Blob !== 'undefined' && image instanceof Blob ? image.type : '';
    const contentType = options?.contentType ?? (blobType || sniff(bytes) || 'application/octet-stream');
    return (
      await this.transport.request<Photo>({
        method: 'POST',
        path: `/pets/${id(petId)}/photos`,
        bytes,
        contentType,
        operation: 'POST /pets/{petId}/photos',
        options,
      })
    ).data;
  }

  /** Every photo of the pet, by position (the first is the primary one). */
  async list(petId: number, options?: RequestOptions): Promise<Photo[]> {
    return (
      await this.transport.request<Photo[]>({
        method: 'GET',
        path: `/pets/${id(petId)}/photos`,
        operation: 'GET /pets/{petId}/photos',
        options,
      })
    ).data;
  }

  /** Moves a photo to `position` (0: the primary photo). */
  async reorder(petId: number, photoId: string, position: number, options?: RequestOptions): Promise<Photo> {
    return (
      await this.transport.request<Photo>({
        method: 'PATCH',
        path: `/pets/${id(petId)}/photos/${encodeURIComponent(photoId)}`,
        body: { position },
        operation: 'PATCH /pets/{petId}/photos/{photoId}',
        options,
      })
    ).data;
  }

  async delete(petId: number, photoId: string, options?: RequestOptions): Promise<void> {
    await this.transport.request<undefined>({
      method: 'DELETE',
      path: `/pets/${id(petId)}/photos/${encodeURIComponent(photoId)}`,
      operation: 'DELETE /pets/{petId}/photos/{photoId}',
      options,
    });
  }

  /** A rendering's bytes (WebP). In a page, use `photo.urls[size]` in an `<img>`: it needs no key. */
  async download(photoId: string, size: PhotoSize, options?: RequestOptions): Promise<Uint8Array> {
    return (
      await this.transport.request<Uint8Array>({
        method: 'GET',
        path: `/photos/${encodeURIComponent(photoId)}/${size}.webp`,
        operation: 'GET /photos/{photoId}/{file}',
        binaryResponse: true,
        options,
      })
    ).data;
  }
}

export class Listings {
  constructor(private readonly transport: Transport) {}

  /** Every listing matching the query, following the pages (`.pages()` for one page at a time). */
  search(query: SearchListingsQuery = {}, options?: RequestOptions): PageIterable<Listing> {
    return new PageIterable<Listing>(async (next) => {
      const answer = await this.transport.request<Listing[]>({
        method: 'GET',
        path: '/listings',
        url: next,
        query: next === undefined ? { limit: 100, ...query } : undefined,
        operation: 'GET /listings',
        options,
      });
      return { items: answer.data, link: answer.response.headers.get('link'), url: answer.url };
    });
  }
}
