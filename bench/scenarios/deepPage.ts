/**
 * The same page as `list`, reached through a cursor 900,000 rows deep. The cursor is one the service
 * issued: setup follows its `Link: rel="next"` headers (pages of 100) down to that depth, so the benchmark
 * holds no copy of the cursor encoding, and checks that the page starts where it should.
 */
import { defineScenario } from '../lib/scenario.js';

export const DEEP_AFTER_ID = 900_000;

interface Page {
  ids: number[];
  next?: string;
}

async function page(url: string, headers: Record<string, string>): Promise<Page> {
  const res = await fetch(url, { headers });
  const body = (await res.json()) as { id: number }[];
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${JSON.stringify(body)}`);
  const link = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '');
  return { ids: body.map((p) => p.id), next: link?.[1] };
}

export default defineScenario({
  name: 'deepPage',
  label: `GET /v1/pets?limit=20&cursor=(after id ${DEEP_AFTER_ID})`,
  order: 20,
  usesSqlite: true,
  async setup(ctx) {
    const s = await ctx.sqlite();
    const started = Date.now();
    let current = await page(`${s.origin}/v1/pets?limit=100`, s.auth);
    while (current.ids.at(-1)! < DEEP_AFTER_ID) {
      if (!current.next) throw new Error(`the pages ended at id ${current.ids.at(-1)}`);
      current = await page(new URL(current.next, s.origin).href, s.auth);
    }
    const cursor = current.next && new URL(current.next, s.origin).searchParams.get('cursor');
    if (current.ids.at(-1) !== DEEP_AFTER_ID || !cursor) {
      throw new Error(`no page ends at id ${DEEP_AFTER_ID} (one ends at ${current.ids.at(-1)})`);
    }
    const deepUrl = `${s.origin}/v1/pets?limit=20&cursor=${cursor}`;
    const check = await page(deepUrl, s.auth);
    if (check.ids[0] !== DEEP_AFTER_ID + 1 || check.ids.length !== 20) {
      throw new Error(`deep page check failed: ids ${check.ids.join(',')}`);
    }
    ctx.log(
      `deepPage: followed Link headers to id ${DEEP_AFTER_ID} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    return { pid: s.pid, deepUrl, auth: s.auth };
  },
  load: (s) => ({ pid: s.pid, url: s.deepUrl, headers: s.auth }),
});
