import type { CanActivate, Type } from '@nestjs/common';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { assertKnownKeys, describe } from '../../locking/lock-options';
import type { LockKeyAttribute } from '../../telemetry/lock-telemetry-options';

/** Options of `DistributedLockModule.operations`: where the operator's endpoints are, and who may call them. */
export interface LockOperationsOptions {
  /** The route of the endpoints, e.g. "ops/locks" (`GET /ops/locks?key=…`). Default "locks". */
  readonly path?: string;
  /**
   * Guards every endpoint runs behind (your authentication and authorisation), as `@UseGuards` takes them.
   * A guard class is made by Nest in this module, with what the application's global modules provide.
   */
  readonly guards?: ReadonlyArray<Type<CanActivate> | CanActivate>;
  /** Also mount `POST <path>/break`, the break-glass release (`LockService.breakLock`). Default false. */
  readonly allowBreak?: boolean;
  /**
   * How the answers show a key, which can carry user data: as the telemetry writes it on spans (`'hashed'`:
   * `key#` and the first 16 hex digits of its SHA-256; `'plain'`; `'omit'`: null; or your function). The
   * request names keys as they are. Default: the module's `telemetry.key`, else `'hashed'`.
   */
  readonly keys?: LockKeyAttribute;
}

/** The options as the endpoints use them. */
export interface ResolvedLockOperationsOptions {
  readonly path: string;
  readonly guards: ReadonlyArray<Type<CanActivate> | CanActivate>;
  readonly allowBreak: boolean;
  readonly keys: LockKeyAttribute | undefined;
}

const OPTION_KEYS = ['path', 'guards', 'allowBreak', 'keys'];
const KEY_MODES = ['hashed', 'plain', 'omit'];
/** A route: segments of letters, digits, `-`, `_` and `.`, separated by single slashes. */
const ROUTE = /^\/?[\w.-]+(\/[\w.-]+)*\/?$/;

/** Checks `DistributedLockModule.operations` options; throws `InvalidLockOptionsError` naming the option. */
export function validateLockOperationsOptions(input: unknown): ResolvedLockOperationsOptions {
  if (input === undefined) return { path: 'locks', guards: [], allowBreak: false, keys: undefined };
  assertKnownKeys(input, OPTION_KEYS, 'DistributedLockModule.operations options');
  const options = input as LockOperationsOptions;
  const path = options.path ?? 'locks';
  if (typeof path !== 'string' || !ROUTE.test(path)) {
    throw new InvalidLockOptionsError('operations.path', `expected a route such as "ops/locks" (letters, digits, "-", "_", "." and "/"), got ${describe(path)}.`);
  }
  const guards = options.guards ?? [];
  if (!Array.isArray(guards) || guards.some((guard) => typeof guard !== 'function' && (typeof guard !== 'object' || guard === null || typeof (guard as CanActivate).canActivate !== 'function'))) {
    throw new InvalidLockOptionsError('operations.guards', `expected an array of guard classes or guard instances (with canActivate), got ${describe(guards)}.`);
  }
  const allowBreak = options.allowBreak ?? false;
  if (typeof allowBreak !== 'boolean') throw new InvalidLockOptionsError('operations.allowBreak', `expected true or false, got ${describe(allowBreak)}.`);
  const keys = options.keys;
  if (keys !== undefined && typeof keys !== 'function' && !KEY_MODES.includes(keys)) {
    throw new InvalidLockOptionsError('operations.keys', `expected "hashed", "plain", "omit" or a function, got ${describe(keys)}.`);
  }
  return { path, guards, allowBreak, keys };
}
