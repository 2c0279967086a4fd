import { lockKeyHash } from '../locking/lock-key-hash';
import { LOCK_TELEMETRY } from './lock-telemetry-names';
import type { LockKeyAttribute } from './lock-telemetry-options';

/** Keys whose hash is remembered: a busy key is hashed once, not per acquisition. */
const HASH_CACHE_SIZE = 1_000;

/**
 * Turns a key into its span attribute (name and value) as `mode` says; undefined when it is left out,
 * also when a key function throws (it must not fail the acquisition).
 */
export function keyAttribute(mode: LockKeyAttribute): (key: string) => readonly [string, string] | undefined {
  if (mode === 'omit') return () => undefined;
  if (mode === 'plain') return (key) => [LOCK_TELEMETRY.attributes.key, key];
  if (typeof mode === 'function') {
    return (key) => {
      try {
        return [LOCK_TELEMETRY.attributes.key, String(mode(key))];
      } catch {
        return undefined;
      }
    };
  }
  const hashes = new Map<string, readonly [string, string]>();
  return (key) => {
    let attribute = hashes.get(key);
    if (!attribute) {
      if (hashes.size >= HASH_CACHE_SIZE) hashes.clear();
      attribute = [LOCK_TELEMETRY.attributes.keyHash, lockKeyHash(key)];
      hashes.set(key, attribute);
    }
    return attribute;
  };
}

/**
 * A key as text, as `mode` shows it on spans: as it is for `'plain'`, `key#` and its hash for `'hashed'`
 * (the `lock.key.hash` value), the function's value; null when it is left out.
 */
export function keyAsText(mode: LockKeyAttribute): (key: string) => string | null {
  const attribute = keyAttribute(mode);
  return (key) => {
    const shown = attribute(key);
    if (!shown) return null;
    return shown[0] === LOCK_TELEMETRY.attributes.keyHash ? `key#${shown[1]}` : shown[1];
  };
}

/**
 * Writes `key` inside a text (an error message a span's status quotes) as `mode` writes it on spans (see
 * `keyAsText`), or `(key omitted)`. No text on a span carries a key the attributes would not show.
 */
export function keyInText(mode: LockKeyAttribute): (text: string, key: string) => string {
  if (mode === 'plain') return (text) => text;
  const asText = keyAsText(mode);
  return (text, key) => {
    if (!key || !text.includes(key)) return text;
    return text.split(key).join(asText(key) ?? '(key omitted)');
  };
}
