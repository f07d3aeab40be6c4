/**
 * A pet's photos: upload (the image is the body), list, reorder, delete, and the renderings served
 * without a key at unguessable, immutable URLs.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { ifNoneMatchHits } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { IdempotencyHeaders, idempotencyInput, refusal, replay } from '../../http/idempotency/index.js';
import { idempotencyRepository, type IdempotencyRepository } from '../../db/idempotency/repository.js';
import {
  errorResponses,
  etagHeader,
  header,
  locationHeader,
  rateLimitNote,
  replayedHeader,
} from '../../http/responses.js';
import { MAX_ID, pathId, ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import {
  MAX_PHOTO_BYTES,
  MAX_PIXELS,
  MAX_SIDE,
  PHOTO_TYPES,
  processPhoto,
  readHeader,
  type PhotoType,
  type ProcessedPhoto,
} from './image.js';
import { DecodeBudget } from './decode-budget.js';
import { DEFAULT_DECODE_BUDGET_MB, DEFAULT_DECODE_WAIT_MS } from './settings.js';
import { photoRepository, type PhotoWrite } from './repository.js';
import {
  MAX_PHOTOS,
  Photo,
  PHOTO_ID_PATTERN,
  PHOTO_SIZES,
  PhotoParams,
  renderPhoto,
  renderStoredPhoto,
  type PhotoRecord,
  type PhotoSize,
} from './schemas.js';
import { petError } from '../pets/index.js';
import { limitError, photoNotFound, wrongType } from './errors.js';

const REPLAYED = {
  'Idempotent-Replayed': replayedHeader('`true` when this response replays an earlier one.'),
};
const PHOTO_ID = new RegExp(PHOTO_ID_PATTERN);
/** Uploads that may wait for room in the decode budget; the next one is refused at once. */
const MAX_DECODES_WAITING = 16;
const FILE = /^(small|medium|large|full)\.webp$/;

const PetParams = Type.Object({
  petId: pathId('The pet id, a positive integer. Malformed: 400; well-formed but unknown: 404.', 42),
});
const Photos = Type.Array(ref(Photo), { maxItems: MAX_PHOTOS, description: 'The photos by position.' });
const binary = (type: string) => ({
  schema: {
    format: 'binary',
    maxLength: MAX_PHOTO_BYTES,
    description: `The image itself (${type}), at most 10 MiB, ${MAX_SIDE} pixels a side and 50 megapixels.`,
  },
});

export const photoRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (
  app,
  { database, clock, config },
) => {
  const photos = database.repository(photoRepository);
  const records: IdempotencyRepository = database.repository(idempotencyRepository);
  const budget = new DecodeBudget(
    (config.photoDecodeBudgetMb ?? DEFAULT_DECODE_BUDGET_MB) * 1024 * 1024,
    config.photoDecodeWaitMs ?? DEFAULT_DECODE_WAIT_MS,
    MAX_DECODES_WAITING,
  );
  const base = config.publicUrl ?? '';

  function refused<T>(result: PhotoWrite<T>): T | { kind: 'replayed'; status: number; body: unknown } {
    const kind = (result as { kind: string }).kind;
    if (kind === 'idempotency_mismatch') throw refusal('mismatch');
    if (kind === 'idempotency_in_progress') throw refusal('in_progress');
    return result as T | { kind: 'replayed'; status: number; body: unknown };
  }
  const notFound = (petId: number) => petError('pet_not_found', `No pet with id ${petId}.`);

  // The upload is the only route taking images: the parsers and the 10 MiB limit live in this scope alone,
  // so every other route keeps the API's 16 KiB JSON bodies.
  await app.register(async (upload) => {
    // The catalogue's 413 message names the API's 16 KiB JSON limit; here the limit is the image's. Anything
    // rethrown goes on to the application's error handler, which answers in the Error shape.
    // Likewise its 415 names application/json: a body of another type (or none) fails in the parser, before
    // the handler, so the answer naming the image types is given here.
    upload.setErrorHandler((error: FastifyError) => {
      if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
        throw new ApiError('payload_too_large', 'The image is larger than 10 MiB.');
      if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') throw wrongType();
      throw error;
    });
    // Images only: the API's JSON parser is not inherited here, so a JSON body is a wrong type like any other.
    upload.removeAllContentTypeParsers();
    for (const type of Object.keys(PHOTO_TYPES)) {
      upload.addContentTypeParser(type, { parseAs: 'buffer', bodyLimit: MAX_PHOTO_BYTES }, (_r, body, done) =>
        done(null, body),
      );
    }
    upload.post(
      '/pets/:petId/photos',
      {
        bodyLimit: MAX_PHOTO_BYTES,
        config: { access: { scopes: ['pets:write'] } },
        schema: {
          operationId: 'addPetPhoto',
          tags: ['animals'],
          summary: 'Add a photo',
          description:
            'The body is the image itself: `image/jpeg`, `image/png` or `image/webp`, at most 10 MiB, each side ' +
            `at most ${MAX_SIDE} pixels and at most ${MAX_PIXELS / 1_000_000} megapixels (checked from the ` +
            "image's header before any pixel is decoded). The service keeps the original, upright and " +
            're-encoded without metadata, and serves WebP renderings (small fits 100×100, medium 300×300, ' +
            'large 600×600, full ≤ 1600 on its long side), upright, with every metadata block (EXIF, GPS, XMP, ' +
            'ICC) removed. A body that does not decode, is truncated, is not the type its Content-Type says, or ' +
            'declares dimensions past the limits answers 422 `invalid_image` naming the limit; a body of another ' +
            'type (or none) 415 naming the accepted types. Decoding runs under a memory budget for the whole ' +
            'instance: an upload that finds no room within a short wait answers 503 `overloaded` with ' +
            `\`Retry-After\`. At most ${MAX_PHOTOS} photos a pet (409 \`photo_limit\`); the first is the primary ` +
            'one. Supports `Idempotency-Key` (a replay does no image work). ' +
            rateLimitNote,
          params: PetParams,
          headers: IdempotencyHeaders,
          body: {
            content: {
              'image/jpeg': binary('JPEG'),
              'image/png': binary('PNG'),
              'image/webp': binary('WebP'),
            },
          },
          response: {
            201: {
              ...ref(Photo),
              headers: {
                Location: locationHeader('The photo: `/v1/pets/{petId}/photos/{photoId}`.'),
                ...REPLAYED,
              },
            },
            ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422, 503),
          },
        },
      },
      async (request, reply) => {
        // This scope has no type provider of its own; the schema validated the parameter.
        const { petId } = request.params as { petId: number };
        const body = request.body as unknown;
        const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() as PhotoType;
        if (!Buffer.isBuffer(body) || !(type in PHOTO_TYPES)) throw wrongType();
        if (petId > MAX_ID) throw notFound(petId);
        const digest = createHash('sha256').update(body).digest('base64url');
        const idempotency = idempotencyInput(request, 'addPetPhoto', [petId, type, digest], clock);
        // A repeat is answered before any image work: a replay costs one lookup, not a decode.
        const earlier = idempotency && (await records.peek(idempotency));
        if (earlier?.kind === 'mismatch') throw refusal('mismatch');
        if (earlier) return created(replay(reply, earlier.status), earlier.body as PhotoRecord);
        // Refused early when it cannot be stored, before the image work; the transaction checks again.
        const count = await photos.count(petId);
        if (count === undefined) throw notFound(petId);
        if (count >= MAX_PHOTOS && !idempotency) throw limitError();
        const header = await readHeader(body, type);
        const release = await budget.acquire(header.decodedBytes);
        let processed: ProcessedPhoto;
        try {
          processed = await processPhoto(body, type, header);
        } finally {
          release();
        }
        const result = refused(
          await photos.add(
            {
              id: randomBytes(16).toString('base64url'),
              petId,
              width: processed.width,
              height: processed.height,
              original: processed.original,
              files: processed.files,
              now: idempotency?.now ?? clock(),
              max: MAX_PHOTOS,
            },
            idempotency,
          ),
        );
        switch (result.kind) {
          case 'added':
            return created(reply.code(201), result.photo);
          case 'replayed':
            return created(replay(reply, result.status), result.body as PhotoRecord);
          case 'not_found':
            throw notFound(petId);
          case 'limit':
            throw limitError();
        }
      },
    );
  });

  function created(reply: FastifyReply, photo: PhotoRecord): FastifyReply {
    return reply
      .header('location', `/v1/pets/${photo.petId}/photos/${photo.id}`)
      .send(renderPhoto(photo, base));
  }

  app.get(
    '/pets/:petId/photos',
    {
      config: { access: { scopes: ['pets:read'] } },
      schema: {
        operationId: 'listPetPhotos',
        tags: ['animals'],
        summary: "List an animal's photos",
        description: `Every photo of the pet by \`position\` (the first is the primary one). ${rateLimitNote}`,
        params: PetParams,
        response: { 200: Photos, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { petId } = request.params;
      const list = petId <= MAX_ID ? await photos.list(petId) : undefined;
      if (!list) throw notFound(petId);
      return list.flatMap((photo) => renderStoredPhoto(photo, base) ?? []);
    },
  );

  app.patch(
    '/pets/:petId/photos/:photoId',
    {
      config: { access: { scopes: ['pets:write'] } },
      schema: {
        operationId: 'movePetPhoto',
        tags: ['animals'],
        summary: 'Move a photo',
        description:
          '`{ "position": n }` moves the photo to place n (0 is the primary photo); the photos between its old ' +
          'and new place shift by one. A position past the last photo answers 400. Supports `Idempotency-Key`. ' +
          rateLimitNote,
        params: PhotoParams,
        headers: IdempotencyHeaders,
        body: Type.Object(
          {
            position: Type.Integer({
              minimum: 0,
              maximum: MAX_PHOTOS - 1,
              description: 'The new place, from 0.',
            }),
          },
          { additionalProperties: false, example: { position: 0 } },
        ),
        response: {
          200: { ...ref(Photo), headers: REPLAYED },
          ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const { petId, photoId } = request.params;
      const { position } = request.body;
      if (petId > MAX_ID || !PHOTO_ID.test(photoId)) throw photoNotFound(photoId);
      const idempotency = idempotencyInput(request, 'movePetPhoto', [petId, photoId, position], clock);
      const result = refused(await photos.move(petId, photoId, position, idempotency));
      switch (result.kind) {
        case 'done':
          return renderPhoto(result.photo, base);
        case 'replayed':
          return replay(reply, result.status).send(renderPhoto(result.body as PhotoRecord, base));
        case 'not_found':
          throw photoNotFound(photoId);
        case 'bad_position':
          throw new ApiError('validation_failed', {
            message: `Invalid request: position must be below ${result.count}.`,
            details: [
              { field: 'position', message: `must be below ${result.count} (the pet's number of photos)` },
            ],
          });
      }
    },
  );

  app.delete(
    '/pets/:petId/photos/:photoId',
    {
      config: { access: { scopes: ['pets:write'] } },
      schema: {
        operationId: 'deletePetPhoto',
        tags: ['animals'],
        summary: 'Delete a photo',
        description:
          '`204`; the photos after it move up one place, and its URLs answer 404. Supports `Idempotency-Key`. ' +
          rateLimitNote,
        params: PhotoParams,
        headers: IdempotencyHeaders,
        response: {
          204: { type: 'null', description: 'Deleted.', headers: REPLAYED },
          ...errorResponses(400, 401, 403, 404, 409, 422),
        },
      },
    },
    async (request, reply) => {
      const { petId, photoId } = request.params;
      if (petId > MAX_ID || !PHOTO_ID.test(photoId)) throw photoNotFound(photoId);
      const idempotency = idempotencyInput(request, 'deletePetPhoto', [petId, photoId], clock);
      const result = refused(await photos.remove(petId, photoId, idempotency));
      switch (result.kind) {
        case 'done':
          return reply.code(204).send(null);
        case 'replayed':
          return replay(reply, result.status).send(null);
        case 'not_found':
          throw photoNotFound(photoId);
        case 'bad_position':
          throw new ApiError('internal_error');
      }
    },
  );

  app.get(
    '/photos/:photoId/:file',
    {
      config: { access: 'asset' },
      schema: {
        operationId: 'getPhotoFile',
        tags: ['animals'],
        summary: 'Get a photo rendering',
        description:
          '`{size}.webp` with size `small`, `medium`, `large` or `full`. No key needed (the id is unguessable) ' +
          'and not counted against any rate limit; cached for a year (`immutable`), `If-None-Match` answers 304.',
        params: Type.Object({
          photoId: Type.String({
            maxLength: 64,
            description: 'The photo id.',
            example: 'Xq3bN0c5Zt9uKp2sLw8aYA',
          }),
          file: Type.String({
            maxLength: 20,
            description: '`small.webp`, `medium.webp`, `large.webp` or `full.webp`.',
            example: 'medium.webp',
          }),
        }),
        response: {
          200: {
            description: 'The WebP image.',
            content: {
              'image/webp': { schema: { type: 'string', format: 'binary', maxLength: MAX_PHOTO_BYTES } },
            },
            headers: {
              ETag: etagHeader('Strong; the bytes never change.'),
              'Cache-Control': header('`public, max-age=31536000, immutable`.'),
            },
          },
          304: { type: 'null', description: 'Not modified.' },
          ...errorResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const { photoId, file } = request.params;
      const size = FILE.exec(file)?.[1] as PhotoSize | undefined;
      if (!size || !PHOTO_ID.test(photoId) || !PHOTO_SIZES.includes(size)) throw photoNotFound(photoId);
      const etag = `"${photoId}.${size}"`;
      const ifNoneMatch = request.headers['if-none-match'];
      if (ifNoneMatch !== undefined) {
        // The bytes behind an id never change, so a 304 needs only to know the photo is still there; a
        // deleted or unknown one is a 404, whatever tag (or `*`) the client sends.
        const current = (await photos.exists(photoId)) ? etag : undefined;
        if (!current) throw photoNotFound(photoId);
        if (ifNoneMatchHits(ifNoneMatch, current)) return immutable(reply, etag).code(304).send(null);
      }
      const bytes = await photos.file(photoId, size);
      if (!bytes) throw photoNotFound(photoId);
      immutable(reply, etag);
      // Bytes, not the documented schema's JSON: sent as they are.
      return (reply as FastifyReply).type('image/webp').send(bytes);
    },
  );
};

function immutable(reply: FastifyReply, etag: string): FastifyReply {
  return reply
    .header('cache-control', 'public, max-age=31536000, immutable')
    .header('content-security-policy', "default-src 'none'")
    .header('etag', etag);
}
