import { BadRequestException, ServiceUnavailableException } from '@nestjs/common';
import { DistributedLockError } from '../../errors/distributed-lock.error';
import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { StrategyNotRegisteredError } from '../../errors/strategy-not-registered.error';
import type { LockHolderInfo, LockInfo, PermitsInfo } from '../../locking/lock-query';
import { keyAsText, keyInText } from '../../telemetry/key-attribute';
import type { LockKeyAttribute } from '../../telemetry/lock-telemetry-options';

/** The most keys one request may ask about: each is a call to the backend. */
export const MAX_KEYS_PER_REQUEST = 100;

/** A key's state as the endpoints answer it: `LockInfo` with its whole key (prefix included) shown as the options say (null: omitted). */
export type LockInfoAnswer = Omit<LockInfo, 'key'> & { readonly key: string | null };

/** The answer of `GET <path>`: the strategy asked, and each key's state in the order asked. */
export interface LockQueryAnswer {
  readonly strategy: string;
  readonly locks: readonly LockInfoAnswer[];
}

/** The answer of `GET <path>/prefix`: the strategy asked, one page of the held keys under the prefix, and the next page's cursor. */
export interface LockPageAnswer {
  readonly strategy: string;
  readonly locks: readonly LockInfoAnswer[];
  readonly next: string | null;
}

/** A semaphore's state as the endpoints answer it: `PermitsInfo` with its whole key shown as the options say. */
export type PermitsInfoAnswer = Omit<PermitsInfo, 'key'> & { readonly key: string | null };

/** The answer of `GET <path>/permits`: the strategy asked, and each semaphore's state in the order asked. */
export interface PermitsQueryAnswer {
  readonly strategy: string;
  readonly semaphores: readonly PermitsInfoAnswer[];
}

/** The answer of `POST <path>/break`: the holds ended. */
export interface LockBreakAnswer {
  readonly strategy: string;
  readonly key: string | null;
  readonly broken: readonly LockHolderInfo[];
}

/** How a key is shown in answers and error messages: as the telemetry shows it on spans (`keyAsText`). */
export function keyShown(mode: LockKeyAttribute): { key(key: string): string | null; inText(text: string, key: string): string } {
  return { key: keyAsText(mode), inText: keyInText(mode) };
}

/** The `key` query parameter as keys: one or more (`?key=a&key=b`), at most MAX_KEYS_PER_REQUEST, each a non-empty string. */
export function requestedKeys(value: unknown): string[] {
  const keys = Array.isArray(value) ? (value as unknown[]) : value === undefined ? [] : [value];
  if (keys.length === 0) throw new BadRequestException('Name the keys to look at: ?key=<key>, repeated for several.');
  if (keys.length > MAX_KEYS_PER_REQUEST) throw new BadRequestException(`At most ${MAX_KEYS_PER_REQUEST} keys per request, got ${keys.length}.`);
  if (keys.some((key) => typeof key !== 'string' || key === '')) throw new BadRequestException('Every key must be a non-empty string.');
  return keys as string[];
}

/** An optional string field of the request (the strategy's name). */
export function optionalName(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new BadRequestException(`${field} must be a non-empty string when given.`);
  return value;
}

/**
 * `error`'s message with `key` shown as the answers show it. A refused key is quoted escaped and cut short
 * in its message, in forms no replacement finds: unless keys are shown plain, the quote goes, and the key
 * is named as the answers name it.
 */
function messageShowing(error: DistributedLockError, key: string, show: ReturnType<typeof keyShown>): string {
  if (error instanceof InvalidLockKeyError && show.key(key) !== key) {
    const quoted = error.message.lastIndexOf(' (got ');
    const problem = quoted >= 0 ? error.message.slice(0, quoted) : error.constructor.name;
    const shown = show.key(key);
    return shown === null ? `${problem} (the key is not shown)` : `${problem} (key ${shown})`;
  }
  return show.inText(error.message, key);
}

/**
 * The library's refusal as an HTTP answer: bad input or an unknown strategy is the caller's to fix (400), a
 * backend that did not answer in time is 503. The message shows keys as the answers do. Anything else is
 * thrown on as it is, for the application's own exception filters.
 */
export function httpErrorOf(error: unknown, key: string | undefined, show: ReturnType<typeof keyShown>): unknown {
  if (!(error instanceof DistributedLockError)) return error;
  const message = key === undefined ? error.message : messageShowing(error, key, show);
  if (error instanceof InvalidLockKeyError || error instanceof InvalidLockOptionsError || error instanceof StrategyNotRegisteredError) {
    return new BadRequestException({ statusCode: 400, error: error.name, message });
  }
  if (error instanceof LockBackendUnavailableError) return new ServiceUnavailableException({ statusCode: 503, error: error.name, message });
  return error;
}
