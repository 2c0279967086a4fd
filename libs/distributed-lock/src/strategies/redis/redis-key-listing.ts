import type { Redis } from 'ioredis';
import type { KeyListing } from '../../locking/lock-query';
import { encodedTag } from './redis-keys';

/** SCAN calls one page may make at most: a page never holds the server long, even where few keys match. */
const SCANS_PER_PAGE = 10;
/**
 * Names one SCAN call looks at (its COUNT): each lock leaves more keys than its hash (its fencing counter
 * stays), so most names a SCAN sees are not lock hashes; a page looks at 10 x 1,000 of them at most.
 */
const NAMES_PER_SCAN = 1_000;

/** A SCAN pattern matches `*`, `?`, `[`, `]` and `\` literally only escaped. */
function globEscaped(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** The user's key named by a lock hash's name (`<namespace>{<encoded key>}:lock`), or undefined for another name. */
function keyOfLockName(name: string, namespace: string): string | undefined {
  const start = `${namespace}{`;
  if (!name.startsWith(start) || !name.endsWith('}:lock')) return undefined;
  const tag = name.slice(start.length, -'}:lock'.length);
  if (tag.includes('{') || tag.includes('}')) return undefined;
  return tag.replace(/%(25|7B|7D)/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * The keys under `prefix` whose lock hash exists (a writer, readers, or a claim handed to the queue's head),
 * a page at a time: SCAN with MATCH over the lock hashes' names, `cursor` SCAN's own. Each call looks at
 * about NAMES_PER_SCAN names, and a page makes at most SCANS_PER_PAGE calls, so it may hold fewer keys than
 * `limit` (or none) and still have a next page; one call may also bring more than `limit`.
 */
export async function listRedisLockKeys(client: Pick<Redis, 'scan'>, namespace: string, prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
  const pattern = `${globEscaped(namespace)}{${globEscaped(encodedTag(prefix))}*}:lock`;
  let cursor = page.cursor ?? '0';
  const keys: string[] = [];
  for (let scans = 0; scans < SCANS_PER_PAGE; scans += 1) {
    const [next, names] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', NAMES_PER_SCAN);
    cursor = next;
    for (const name of names) {
      const key = keyOfLockName(name, namespace);
      if (key !== undefined && key.startsWith(prefix)) keys.push(key);
    }
    if (cursor === '0' || keys.length >= page.limit) break;
  }
  return cursor === '0' ? { keys } : { keys, next: cursor };
}
