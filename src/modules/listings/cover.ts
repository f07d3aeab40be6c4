/**
 * What the location index (migration 018) is asked for a ring around a point: the index holds each
 * profile's latitude band (`band`: 1/BANDS_PER_DEGREE of a degree) and longitude, and a ring is covered by
 * the longitude ranges, band by band, that can hold a point whose great-circle distance from the centre is
 * between `inner` and `outer`. The cover is conservative: every such point lies in a range (and in exactly
 * one); a range may hold points outside the ring, which the query's own distance then leaves out.
 *
 * Why rings: a page sorted by distance starts at the previous page's last distance, so the ring from there
 * outwards holds the page, and the pets nearer than that are not read at all; a page deep in the results
 * costs what the first does (the first page's ring is a disc).
 */

export const BANDS_PER_DEGREE = 100;
/** A band of the index and a closed range of longitudes in it: [band, from, to]. */
export type CoverRange = [number, number, number];

const DEG = Math.PI / 180;
/** Slack on every bound so that rounding can only widen the cover, never narrow it. */
const SLACK_DEG = 1e-6;
const SLACK_KM = 1e-6;

/** The band of a latitude, as the index computes it (SQLite `CAST(… AS INTEGER)`, PostgreSQL `floor`). */
export function bandOf(latitude: number): number {
  return Math.trunc((latitude + 90) * BANDS_PER_DEGREE);
}

/**
 * Half the longitude span (radians) of the circle of angular radius `rho` around latitude `phi0`, at
 * latitude `phi`: NaN where the circle does not reach that latitude, π where it holds every longitude.
 */
function halfWidth(rho: number, phi0: number, phi: number, clamp: boolean): number {
  const denominator = Math.cos(phi0) * Math.cos(phi);
  const numerator = Math.cos(rho) - Math.sin(phi0) * Math.sin(phi);
  if (denominator <= 1e-15) return numerator <= 0 ? Math.PI : clamp ? 0 : NaN;
  let c = numerator / denominator;
  if (c <= -1) return Math.PI;
  if (c > 1) {
    if (!clamp) return NaN;
    c = 1;
  }
  return Math.acos(c);
}

/** The largest half-width over latitudes [a, b] (radians), or NaN when the circle reaches none of them. */
function widest(rho: number, phi0: number, a: number, b: number): number {
  const from = Math.max(a, phi0 - rho);
  const to = Math.min(b, phi0 + rho);
  if (from > to) return NaN;
  // The half-width grows from the circle's southern and northern extremes to the latitude of its tangent
  // meridians (sin φ = sin φ0 / cos ρ), so the widest point of [from, to] is an end or that latitude.
  let width = Math.max(halfWidth(rho, phi0, from, true), halfWidth(rho, phi0, to, true));
  const s = Math.sin(phi0) / Math.cos(rho);
  if (Math.abs(s) <= 1) {
    const tangent = Math.asin(s);
    if (tangent > from && tangent < to) width = Math.max(width, halfWidth(rho, phi0, tangent, true));
  }
  return width;
}

/**
 * The narrowest half-width over latitudes [a, b], where every latitude of it is reached (so every point
 * of the band within it is inside the circle), or NaN when some latitude of [a, b] is not reached.
 */
function narrowest(rho: number, phi0: number, a: number, b: number): number {
  // Increasing then decreasing (or monotonic, around a pole): the least is at an end.
  return Math.min(halfWidth(rho, phi0, a, false), halfWidth(rho, phi0, b, false));
}

/** [from, to] in degrees, possibly past ±180, as ranges within −180..180. */
function wrap(from: number, to: number, out: [number, number][]): void {
  if (to - from >= 360) {
    out.push([-180, 180]);
    return;
  }
  while (from < -180) {
    from += 360;
    to += 360;
  }
  while (from > 180) {
    from -= 360;
    to -= 360;
  }
  if (to > 180) {
    out.push([from, 180], [-180, to - 360]);
  } else out.push([from, to]);
}

/** The ranges of the index holding every point at a distance from `inner` to `outer` km of the centre. */
export function ringCover(latitude: number, longitude: number, inner: number, outer: number): CoverRange[] {
  const phi0 = latitude * DEG;
  const rhoOut = (outer * (1 + 1e-9) + SLACK_KM) / EARTH_RADIUS_KM;
  const rhoIn = Math.max(0, inner * (1 - 1e-9) - SLACK_KM) / EARTH_RADIUS_KM;
  const reach = rhoOut / DEG + SLACK_DEG;
  const first = Math.max(0, bandOf(Math.max(-90, latitude - reach)));
  const last = Math.min(bandOf(90), bandOf(Math.min(90, latitude + reach)));
  const ranges: CoverRange[] = [];
  for (let band = first; band <= last; band++) {
    // The band's latitudes, widened: the index rounds (latitude + 90) × BANDS_PER_DEGREE itself.
    const a = Math.max(-90, band / BANDS_PER_DEGREE - 90 - SLACK_DEG) * DEG;
    const b = Math.min(90, (band + 1) / BANDS_PER_DEGREE - 90 + SLACK_DEG) * DEG;
    const w = widest(rhoOut, phi0, a, b);
    if (Number.isNaN(w)) continue;
    const outerDeg = w >= Math.PI ? 360 : w / DEG + SLACK_DEG;
    const n = rhoIn > 0 ? narrowest(rhoIn, phi0, a, b) : NaN;
    const innerDeg = Number.isNaN(n) ? 0 : n >= Math.PI ? 360 : n / DEG - SLACK_DEG;
    if (innerDeg >= 180) continue; // every point of the band is nearer than `inner`
    const pieces: [number, number][] = [];
    if (outerDeg >= 180) {
      if (innerDeg > 0) wrap(longitude + innerDeg, longitude + 360 - innerDeg, pieces);
      else pieces.push([-180, 180]);
    } else if (innerDeg > 0 && innerDeg < outerDeg) {
      wrap(longitude - outerDeg, longitude - innerDeg, pieces);
      wrap(longitude + innerDeg, longitude + outerDeg, pieces);
    } else if (innerDeg <= 0) {
      wrap(longitude - outerDeg, longitude + outerDeg, pieces);
    } else continue;
    pieces.sort((x, y) => x[0] - y[0]);
    let current: [number, number] | undefined;
    for (const piece of pieces) {
      if (current && piece[0] <= current[1]) current[1] = Math.max(current[1], piece[1]);
      else {
        if (current) ranges.push([band, current[0], current[1]]);
        current = [piece[0], piece[1]];
      }
    }
    if (current) ranges.push([band, current[0], current[1]]);
  }
  return ranges;
}

/** Mean Earth radius (IUGG), in km. */
export const EARTH_RADIUS_KM = 6371.0088;
