/**
 * The malformed-request generator (fast-check, seeded): request lines, targets, Host, Authorization, media
 * types, bodies and framing drawn from lists of known-odd values and random text, plus whole cases no
 * request-builder would make (HTTP/0.9, CONNECT, random bytes, pipelined garbage).
 * Every case is complete: the server has every byte it needs to judge it, so silence is a hang, not a wait.
 */
import fc from 'fast-check';

export interface Case {
  kind: string;
  bytes: Buffer;
  /** Responses to wait for (pipelined cases send more than one request). */
  want: number;
  head: boolean;
  /** Aims at a pets route without a valid key: any 2xx is an access-control failure. */
  protectedWithoutKey: boolean;
}

/** Targets aiming at /v1/pets in every form a parser or router might read differently. */
const PETS_TARGETS = [
  '/v1/pets',
  '/v1/pets?limit=5',
  'http://x/v1/pets',
  'http://127.0.0.1/v1/pets?limit=2',
  'HTTP://X/v1/pets',
  '//v1/pets',
  '///v1/pets',
  '/v1//pets',
  '/v1/./pets',
  '/v1/x/../pets',
  '/v1/%70ets',
  '/%76%31/pets',
  '/v1/pets;x=1',
  '/v1;x/pets',
  '/V1/PETS',
  '/v1/Pets',
  '/v1/pets/',
  '/v1/pets/1',
  '/v1/pets/1;a',
  '/v1/pets/%31',
  '/v1/pets/1/../1',
  '/v1/pets/..%2f..%2fetc',
  '/v1/pets?cursor=%zz',
  '/v1/pets?limit=1&limit=2',
  '/v1/pets#frag',
  '/v1/pets%00',
  '/v1/pets\\1',
  '/v1/pets/99999999999999999999999',
];
const OTHER_TARGETS = [
  '/v1/categories',
  '/v1/openapi.json',
  '/v1/docs',
  '/healthz',
  '/readyz',
  '/metrics',
  '/v1',
  '/v1/%',
  '/%2e%2e/%2e%2e/etc/passwd',
  '*',
  '',
  '?',
];
const METHODS = [
  'GET',
  'GET',
  'POST',
  'POST',
  'HEAD',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
];
const ODD_METHODS = ['FOO', 'get', 'G\tET', '', 'BREW', 'CONNECT', 'GET/', 'P OST', 'M-SEARCH', 'ÄÖÜ'];
const VERSIONS = [
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.0',
  'HTTP/2.0',
  'HTTP/1.10',
  'http/1.1',
  'HTTX/1.1',
  'HTTP/1.1 x',
  'HTTP/',
];
const CONTENT_TYPES = [
  undefined,
  'application/json',
  'application/json',
  'text/plain',
  'application/xml',
  'application/json; charset=latin1',
  'application/jsonx',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/json, text/plain',
];

const pick = <T>(values: readonly T[]): fc.Arbitrary<T> => fc.constantFrom(...values);
const text = (max: number): fc.Arbitrary<string> => fc.string({ maxLength: max, unit: 'binary' });

function hostArb(): fc.Arbitrary<readonly string[]> {
  const valid: fc.Arbitrary<readonly string[]> = fc.constant(['Host: 127.0.0.1']);
  return fc.oneof<fc.Arbitrary<readonly string[]>[]>(
    valid,
    valid,
    valid,
    valid,
    valid,
    valid,
    fc.constant([]),
    fc.constant(['Host: ']),
    fc.constant(['Host: a b']),
    fc.constant(['Host: 127.0.0.1', 'Host: evil.example']),
    fc.constant([`Host: ${'h'.repeat(300)}`]),
    fc.constant(['Host: [::1']),
    fc.constant(['Host: x:99999']),
    text(20).map((h) => [`Host: ${h.replace(/[\r\n]/g, '')}`]),
  );
}

function authArb(key: string): fc.Arbitrary<{ lines: readonly string[]; valid: boolean }> {
  const bad = (lines: string[]): { lines: readonly string[]; valid: boolean } => ({ lines, valid: false });
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constant({ lines: [`Authorization: Bearer ${key}`] as readonly string[], valid: true }),
    },
    { weight: 4, arbitrary: fc.constant(bad([])) },
    fc.constant(bad(['Authorization: Bearer'])),
    fc.constant(bad(['Authorization: Bearer  '])),
    fc.constant(bad(['Authorization: Basic dXNlcjpwYXNz'])),
    fc.constant(bad([`Authorization: Bearer ${key}x`])),
    fc.constant(bad([`Authorization: Bearer ${key.slice(0, -1)}`])),
    fc.constant(bad([`Authorization: bearer  ${key} extra`])),
    // Node keeps the first of repeated Authorization headers: a valid key was presented.
    fc.constant({ lines: [`Authorization: Bearer ${key}`, 'Authorization: Bearer pas_x'], valid: true }),
    fc.constant(bad([`Authorization: Bearer ${'A'.repeat(5000)}`])),
    fc.constant(bad(['Authorization: Bearer \u00ff\u00fe\u0001'])),
    fc.stringMatching(/^[0-9A-Za-z]{38}$/).map((s) => bad([`Authorization: Bearer pas_${s}`])),
    text(60).map((s) => bad([`Authorization: ${s.replace(/[\r\n]/g, '')}`])),
  );
}

function bodyArb(): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.constant('{"name":"chaos","categoryId":1}') },
    pick([
      '{',
      '{"name":',
      'null',
      '[]',
      '"x"',
      '{"name":"x","categoryId":1,"id":5}',
      '{"name":"x","categoryId":"1"}',
    ]),
    fc.constant('['.repeat(5000)),
    fc.integer({ min: 17_000, max: 60_000 }).map((n) => `{"name":"${'a'.repeat(n)}","categoryId":1}`),
    text(200),
  );
}

/** How the body is framed; only framings that leave nothing for the server to wait for. */
const FRAMINGS = [
  'cl',
  'cl',
  'cl',
  'chunked',
  'cl+te',
  'cl-dup',
  'cl-bad',
  'te-bad',
  'chunk-bad',
  'none',
] as const;

function frame(
  framing: (typeof FRAMINGS)[number],
  body: string | undefined,
  badValue: string,
): { lines: string[]; payload: Buffer } {
  const raw = Buffer.from(body ?? '', 'utf8');
  const chunked = Buffer.concat([
    Buffer.from(`${raw.length.toString(16)}\r\n`),
    raw,
    Buffer.from('\r\n0\r\n\r\n'),
  ]);
  switch (framing) {
    case 'cl':
      return { lines: body === undefined ? [] : [`Content-Length: ${raw.length}`], payload: raw };
    case 'chunked':
      return { lines: ['Transfer-Encoding: chunked'], payload: chunked };
    case 'cl+te':
      return { lines: [`Content-Length: ${raw.length}`, 'Transfer-Encoding: chunked'], payload: chunked };
    case 'cl-dup':
      return { lines: [`Content-Length: ${raw.length}`, `Content-Length: ${raw.length + 1}`], payload: raw };
    case 'cl-bad':
      return { lines: [`Content-Length: ${badValue}`], payload: raw };
    case 'te-bad':
      return { lines: [`Transfer-Encoding: ${badValue === '-1' ? 'gzip' : 'chunked, gzip'}`], payload: raw };
    case 'chunk-bad':
      return {
        lines: ['Transfer-Encoding: chunked'],
        payload: Buffer.concat([Buffer.from('zz\r\n'), raw, Buffer.from('\r\n0\r\n\r\n')]),
      };
    case 'none':
      return { lines: [], payload: raw };
  }
}

/** The parts of a request the generator makes odd; the others stay well-formed. */
const PARTS = [
  'method',
  'separator',
  'version',
  'host',
  'auth',
  'contentType',
  'body',
  'framing',
  'big',
] as const;

/**
 * A well-formed request (GET or POST, a target from the lists) with one or two parts made odd, so most
 * cases get past the HTTP parser and reach routing, access, media-type and body handling; the target
 * itself is always drawn from the odd lists.
 */
function composed(key: string): fc.Arbitrary<Case> {
  return fc
    .record({
      odd: fc.subarray([...PARTS], { minLength: 1, maxLength: 2 }),
      post: fc.boolean(),
      keyed: fc.boolean(),
      method: fc.oneof({ weight: 3, arbitrary: pick(METHODS) }, pick(ODD_METHODS)),
      target: fc.oneof(
        { weight: 3, arbitrary: pick(PETS_TARGETS).map((t) => ({ t, pets: true })) },
        pick(OTHER_TARGETS).map((t) => ({ t, pets: false })),
        text(40).map((t) => ({ t: `/v1/${t}`, pets: false })),
      ),
      separator: pick(['  ', '\t']),
      version: pick(VERSIONS),
      host: hostArb(),
      auth: authArb(key),
      contentType: pick(CONTENT_TYPES),
      body: bodyArb(),
      framing: pick(FRAMINGS),
      badValue: pick(['abc', '-1', '1e3', '0x10', '5, 6', '']),
      big: fc.oneof(
        fc.integer({ min: 10_000, max: 90_000 }).map((n) => [`X-Big: ${'a'.repeat(n)}`]),
        fc.integer({ min: 100, max: 400 }).map((n) => Array.from({ length: n }, (_, i) => `X-H${i}: v`)),
      ),
    })
    .map((r) => {
      const odd = (part: (typeof PARTS)[number]): boolean => r.odd.includes(part);
      const method = odd('method') ? r.method : r.post ? 'POST' : 'GET';
      const separator = odd('separator') ? r.separator : ' ';
      const auth = odd('auth')
        ? r.auth
        : { lines: r.keyed ? [`Authorization: Bearer ${key}`] : [], valid: r.keyed };
      const body = odd('body') ? r.body : method === 'POST' ? '{"name":"chaos","categoryId":1}' : undefined;
      const contentType = odd('contentType')
        ? r.contentType
        : body === undefined
          ? undefined
          : 'application/json';
      const framing = odd('framing') ? r.framing : 'cl';
      const framed = frame(framing, body, r.badValue);
      const lines = [
        `${method}${separator}${r.target.t}${separator}${odd('version') ? r.version : 'HTTP/1.1'}`,
        ...(odd('host') ? r.host : ['Host: 127.0.0.1']),
        ...auth.lines,
        ...(contentType ? [`Content-Type: ${contentType}`] : []),
        ...framed.lines,
        ...(odd('big') ? r.big : []),
      ];
      const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
      return {
        kind: `odd ${r.odd.join('+')}`,
        bytes: Buffer.concat([head, framed.payload]),
        want: 1,
        head: method === 'HEAD',
        protectedWithoutKey: r.target.pets && !auth.valid,
      };
    });
}

function special(key: string): fc.Arbitrary<Case> {
  const only = (kind: string, bytes: string | Buffer, want = 1): Case => ({
    kind,
    bytes: typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes,
    want,
    head: false,
    protectedWithoutKey: false,
  });
  return fc.oneof(
    pick(PETS_TARGETS).map((t) => only('http/0.9', `GET ${t}\r\n`)),
    pick(['127.0.0.1:443', 'x:1', '/v1/pets']).map((t) =>
      only('connect', `CONNECT ${t} HTTP/1.1\r\nHost: ${t}\r\n\r\n`),
    ),
    fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => {
      // Leading CR, LF or space is skipped by the parser, which would then wait for a request line.
      if (b[0] === 0x0d || b[0] === 0x0a || b[0] === 0x20) b[0] = 0;
      return only('random-bytes', Buffer.concat([Buffer.from(b), Buffer.from('\r\n\r\n')]));
    }),
    text(100).map((g) =>
      only(
        'pipelined-garbage',
        `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n` +
          `X${g}\r\n\r\n`,
        2,
      ),
    ),
  );
}

export function malformedCases(key: string, seed: number, count: number): Case[] {
  const arbitrary = fc.oneof(
    { weight: 12, arbitrary: composed(key) },
    { weight: 1, arbitrary: special(key) },
  );
  return fc.sample(arbitrary, { seed, numRuns: count });
}
