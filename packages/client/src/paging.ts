/**
 * Page iteration by following `Link: <…>; rel="next"`. The link may be relative and already hold `/v1`
 * (`</v1/pets?limit=100&cursor=…>`) or absolute (with PUBLIC_URL set); either is resolved against the
 * URL of the answer that carried it, never appended to the base URL.
 */

export interface Page<T> {
  items: T[];
  /** Absolute URL of the next page, when the answer had a `rel="next"` link. */
  nextUrl: string | undefined;
  /** The next page's `cursor`, to resume later with `list({ cursor })` (a feed polled for new events, say). */
  cursor: string | undefined;
}

export type PageFetcher<T> = (
  url: string | undefined,
) => Promise<{ items: T[]; link: string | null; url: string }>;

/**
 * `for await (const item of list)` yields every item of every page; `list.pages()` yields the pages. Nothing is
 * requested until iteration starts, and each iteration starts again from the first page.
 */
export class PageIterable<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: PageFetcher<T>,
    /** Stop after an empty page even when it links onwards (the event feed always does, to be polled). */
    private readonly stopOnEmpty = true,
  ) {}

  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let next: string | undefined;
    let first = true;
    while (first || next !== undefined) {
      const { items, link, url } = await this.fetchPage(first ? undefined : next);
      first = false;
      next = nextLink(link, url);
      yield { items, nextUrl: next, cursor: next === undefined ? undefined : cursorOf(next) };
      if (this.stopOnEmpty && items.length === 0) return;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }
}

function cursorOf(url: string): string | undefined {
  return new URL(url).searchParams.get('cursor') ?? undefined;
}

/**
 * The `rel="next"` target of a Link header (RFC 8288), resolved against `base`. Hand-written: the service's
 * links are simple (`<uri>; rel="…"`, comma-separated), and a parser package would weigh on browser bundles.
 */
export function nextLink(header: string | null, base: string): string | undefined {
  if (!header) return undefined;
  const pattern = /<([^>]*)>((?:\s*;\s*[^;,]+)*)/g;
  for (const match of header.matchAll(pattern)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(match[2] ?? '');
    const values = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (values.includes('next')) return new URL(match[1]!, base).toString();
  }
  return undefined;
}
