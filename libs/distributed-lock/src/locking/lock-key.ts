import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import { LOCK_DEFAULTS } from './lock-options';

// Control characters break logs, protocols and SQL tooling; no backend needs them in a key.
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/**
 * Checks a key (or a key prefix) before any server sees it: a non-empty string of printable characters,
 * at most `LOCK_DEFAULTS.maxKeyLength` characters. Strategies encode keys further for their backend.
 */
export function validateLockKey(key: unknown, what = 'Lock key', allowEmpty = false): string {
  if (typeof key !== 'string') {
    throw new InvalidLockKeyError(String(key), `${what} must be a string, got ${key === null ? 'null' : typeof key}`);
  }
  if (!allowEmpty && key.trim().length === 0) throw new InvalidLockKeyError(key, `${what} must not be empty or blank`);
  if (key.length > LOCK_DEFAULTS.maxKeyLength) {
    throw new InvalidLockKeyError(key, `${what} is ${key.length} characters; it must be at most ${LOCK_DEFAULTS.maxKeyLength}: hash long identifiers`);
  }
  if (!isWellFormed(key)) {
    throw new InvalidLockKeyError(
      key,
      `${what} contains a lone UTF-16 surrogate (half of an emoji or other astral character, e.g. from cutting a string in the middle); ` +
        'servers store it as U+FFFD or refuse it, so it could not name one lock everywhere: pass whole characters',
    );
  }
  if (CONTROL_CHARACTERS.test(key)) {
    throw new InvalidLockKeyError(key, `${what} contains control characters (newline, tab, NUL…); use printable characters only`);
  }
  return key;
}

// A surrogate not paired with its other half (String.prototype.isWellFormed, without needing ES2024 types).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isWellFormed(key: string): boolean {
  return !LONE_SURROGATE.test(key);
}
