/**
 * Turning an upload into the photo's stored files with sharp (libvips), whose work runs on libuv's thread
 * pool, so the event loop keeps answering while a photo is processed. What a client sends is decoded only
 * after its header (read alone, no pixel decoded) says it is the type the client claimed and its
 * dimensions are within the limits; `limitInputPixels` holds the decoders to the same limit. No stored copy
 * keeps location or camera metadata: sharp writes none unless asked, so EXIF (GPS above all), XMP, IPTC and
 * ICC profiles (colour converted to sRGB) are gone; the renderings are upright, the original keeps at most
 * its orientation (see encodeOriginal).
 */
import { channel } from 'node:diagnostics_channel';
import type sharp from 'sharp';
import { ApiError } from '../../http/errors.js';
import { MAX_PHOTO_SIDE, type PhotoSize } from './schemas.js';
import { photoError } from './errors.js';

export const MAX_PHOTO_BYTES = 10 * 1024 * 1024;
/** Each side at most WebP's own limit, so every accepted image has renderings and fits the read schema. */
export const MAX_SIDE = MAX_PHOTO_SIDE;
export const MAX_PIXELS = 50_000_000;
export const PHOTO_TYPES = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp' } as const;
export type PhotoType = keyof typeof PHOTO_TYPES;

/** The long side each rendering fits in. */
export const RENDER_SIZES: Record<PhotoSize, number> = { small: 100, medium: 300, large: 600, full: 1600 };

/** Published once per image decoded (not per header read): tests and diagnostics count decodes with it. */
export const decodeChannel = channel('pet-adoption:photos:decode');

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

// Sequential: rows are decoded as the pipeline asks for them, so a decode streams instead of holding the image.
const INPUT = { limitInputPixels: MAX_PIXELS, failOn: 'truncated', sequentialRead: true } as const;

/** What an image's header says, checked against the limits. */
export interface ImageHeader {
  width: number;
  height: number;
  /** Bytes the decoded image would take whole: the most one decode of it may hold. */
  decodedBytes: number;
  /** EXIF orientation, 1 (as stored) when absent. */
  orientation: number;
  /** The upright dimensions (EXIF orientation 5–8 swaps them). */
  upright: { width: number; height: number };
}

export interface ProcessedPhoto {
  /** Upright dimensions of the original. */
  width: number;
  height: number;
  /** The original, upright and without metadata, in its own format. */
  original: Buffer;
  files: Record<PhotoSize, Buffer>;
}

function invalid(message: string): ApiError {
  return photoError('invalid_image', `Invalid image: ${message}.`);
}

/**
 * Reads the header alone (libvips opens an image lazily: no pixel is decoded until asked for) and refuses
 * what is not the claimed type or is past the limits, naming them.
 */
export async function readHeader(body: Buffer, type: PhotoType): Promise<ImageHeader> {
  const vips = await loadSharp();
  let meta: sharp.Metadata;
  try {
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
  const { width, height } = meta;
  if (!width || !height) throw invalid('it has no dimensions');
  if (width > MAX_SIDE || height > MAX_SIDE) {
    throw invalid(`${width}×${height} has a side over the limit of ${MAX_SIDE} pixels`);
  }
  if (width * height > MAX_PIXELS) {
    throw invalid(`${width}×${height} is over the limit of 50 megapixels`);
  }
  const bands = Math.max(3, Math.min(meta.channels ?? 4, 4));
  const sample = meta.depth === 'ushort' ? 2 : 1;
  const orientation = meta.orientation ?? 1;
  const turned = orientation >= 5;
  return {
    width,
    height,
    orientation,
    decodedBytes: width * height * bands * sample,
    upright: turned ? { width: height, height: width } : { width, height },
  };
}

/**
 * The clean original, in the upload's own format. A JPEG or PNG is decoded and encoded again, which drops
 * its metadata; its EXIF orientation, the one tag kept, is written back alone rather than applied, because
 * turning the pixels needs the whole image in memory (467 MB above idle measured for a 50-megapixel 16-bit
 * PNG) where a decode and an encode stream row by row (JPEG without optimised Huffman tables, whose second
 * pass would hold every coefficient). A WebP can be neither decoded nor encoded by rows (libwebp holds
 * whole frames), so its metadata chunks are cut from the container instead: its pixels stay as sent,
 * lossless, and its orientation goes with its EXIF (the stored dimensions and the renderings are upright).
 */
function encodeOriginal(
  vips: typeof sharp,
  body: Buffer,
  type: PhotoType,
  orientation: number,
): Promise<Buffer> {
  const image = vips(body, INPUT);
  if (orientation >= 2 && orientation <= 8) image.withExif({ IFD0: { Orientation: String(orientation) } });
  switch (type) {
    case 'image/png':
      return image.png({ compressionLevel: 6 }).toBuffer();
    case 'image/jpeg':
      return image.jpeg({ quality: 90, optimiseCoding: false }).toBuffer();
    case 'image/webp': {
      const clean = stripWebp(body);
      if (!clean) throw invalid('its RIFF container is malformed');
      return Promise.resolve(clean);
    }
  }
}

/** WebP chunks that hold metadata, and the VP8X flags announcing them (ICC 0x20, EXIF 0x08, XMP 0x04). */
const WEBP_METADATA = new Set(['EXIF', 'XMP ', 'ICCP']);
const VP8X_METADATA_FLAGS = 0x20 | 0x08 | 0x04;

/**
 * A WebP without its metadata chunks, or undefined when its chunks do not tile the RIFF container. Each
 * step moves past one chunk (at least 8 bytes), so the walk is bounded by the body's length.
 */
export function stripWebp(body: Buffer): Buffer | undefined {
  if (
    body.length < 20 ||
    body.toString('latin1', 0, 4) !== 'RIFF' ||
    body.toString('latin1', 8, 12) !== 'WEBP'
  )
    return undefined;
  const end = Math.min(body.length, 8 + body.readUInt32LE(4));
  const kept: Buffer[] = [];
  let at = 12;
  while (at + 8 <= end) {
    const fourcc = body.toString('latin1', at, at + 4);
    const size = body.readUInt32LE(at + 4);
    if (at + 8 + size > end) return undefined;
    const next = Math.min(end, at + 8 + size + (size & 1));
    if (fourcc === 'VP8X' && size >= 10) {
      const chunk = Buffer.from(body.subarray(at, next));
      chunk[8] = chunk[8]! & ~VP8X_METADATA_FLAGS;
      kept.push(chunk);
    } else if (!WEBP_METADATA.has(fourcc)) {
      kept.push(body.subarray(at, next));
    }
    at = next;
  }
  if (at !== end || kept.length === 0) return undefined;
  const chunks = Buffer.concat(kept);
  const head = Buffer.from('RIFF\0\0\0\0WEBP', 'latin1');
  head.writeUInt32LE(4 + chunks.length, 4);
  return Buffer.concat([head, chunks]);
}

/** Decodes an image whose header `readHeader` accepted: the clean original and the renderings. */
export async function processPhoto(
  body: Buffer,
  type: PhotoType,
  header: ImageHeader,
): Promise<ProcessedPhoto> {
  const vips = await loadSharp();
  decodeChannel.publish({ type, width: header.width, height: header.height });
  let full: { data: Buffer; info: sharp.OutputInfo };
  let original: Buffer;
  try {
    // The renderings' pixels: decoded upright and at most the largest rendering's size (JPEG and WebP
    // shrink while they load); the smaller renderings come from these.
    full = await vips(body, INPUT)
      .rotate()
      .resize(RENDER_SIZES.full, RENDER_SIZES.full, { fit: 'inside', withoutEnlargement: true })
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    // A second pass rather than one decode held for both: each pass streams, one kept whole would not.
    original = await encodeOriginal(vips, body, type, header.orientation);
  } catch (error) {
    if (error instanceof ApiError) throw error;
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
  return { ...header.upright, original, files: { small, medium, large, full: fullWebp } };
}

/** Header check and decode in one step, for uploads made by the service itself (the demo seed, the benchmark). */
export async function processUpload(body: Buffer, type: PhotoType): Promise<ProcessedPhoto> {
  return processPhoto(body, type, await readHeader(body, type));
}
