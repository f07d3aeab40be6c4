/**
 * Turning an upload into the photo's stored files with sharp (libvips), whose work runs on libuv's thread
 * pool, so the event loop keeps answering while a photo is processed. What a client sends is decoded only
 * after its header says it is the type the client claimed and its dimensions are within the limit
 * (`limitInputPixels` refuses a decompression bomb before any pixel is decoded). The renderings are upright
 * (EXIF orientation applied) and carry no metadata: sharp writes none unless asked, so EXIF (GPS above all),
 * XMP and ICC profiles are gone.
 */
import type sharp from 'sharp';
import { ApiError } from '../../http/errors.js';
import type { PhotoSize } from './schemas.js';
import { photoError } from './errors.js';

export const MAX_PHOTO_BYTES = 10 * 1024 * 1024;
export const MAX_PIXELS = 50_000_000;
export const PHOTO_TYPES = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp' } as const;
export type PhotoType = keyof typeof PHOTO_TYPES;

/** The long side each rendering fits in. */
export const RENDER_SIZES: Record<PhotoSize, number> = { small: 100, medium: 300, large: 600, full: 1600 };

let library: Promise<typeof sharp> | undefined;

/**
 * sharp, loaded with the first photo rather than at start: libvips adds to the resident memory of every
 * process that loads it, and most requests (and many deployments) never process an image.
 */
export function loadSharp(): Promise<typeof sharp> {
  library ??= import('sharp').then(({ default: lib }) => {
    // libvips' operation cache holds decoded images; photos are processed once each, so it would only hold memory.
    lib.cache(false);
    return lib;
  });
  return library;
}

const INPUT = { limitInputPixels: MAX_PIXELS, failOn: 'truncated' } as const;

export interface ProcessedPhoto {
  /** Upright dimensions of the original. */
  width: number;
  height: number;
  files: Record<PhotoSize, Buffer>;
}

function invalid(message: string): ApiError {
  return photoError('invalid_image', `Invalid image: ${message}.`);
}

export async function processPhoto(body: Buffer, type: PhotoType): Promise<ProcessedPhoto> {
  const vips = await loadSharp();
  let meta: sharp.Metadata;
  try {
    // The header alone (no pixel is decoded here), so the dimensions can be named when over the limit.
    meta = await vips(body, { ...INPUT, limitInputPixels: false }).metadata();
  } catch {
    throw invalid('the body is not an image sharp can read');
  }
  const expected = PHOTO_TYPES[type];
  if (meta.format !== expected) {
    throw invalid(
      `the body is ${meta.format ?? 'of an unknown format'}, not the ${type} its Content-Type says`,
    );
  }
  if (!meta.width || !meta.height) throw invalid('it has no dimensions');
  if (meta.width * meta.height > MAX_PIXELS) {
    throw invalid(`${meta.width}×${meta.height} is over the limit of 50 megapixels`);
  }
  const turned = (meta.orientation ?? 1) >= 5;
  let full: { data: Buffer; info: sharp.OutputInfo };
  try {
    // Decoded once, upright and at most the largest rendering (a JPEG shrinks while it loads); the smaller
    // renderings come from these pixels.
    full = await vips(body, INPUT)
      .rotate()
      .resize(RENDER_SIZES.full, RENDER_SIZES.full, { fit: 'inside', withoutEnlargement: true })
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch {
    throw invalid('it does not decode (truncated or corrupt)');
  }
  const raw = { raw: { width: full.info.width, height: full.info.height, channels: full.info.channels } };
  const render = (size: PhotoSize) =>
    vips(full.data, raw)
      .resize(RENDER_SIZES[size], RENDER_SIZES[size], { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 80 })
      .toBuffer();
  const [small, medium, large, fullWebp] = await Promise.all([
    render('small'),
    render('medium'),
    render('large'),
    render('full'),
  ]);
  return {
    width: turned ? meta.height : meta.width,
    height: turned ? meta.width : meta.height,
    files: { small, medium, large, full: fullWebp },
  };
}
