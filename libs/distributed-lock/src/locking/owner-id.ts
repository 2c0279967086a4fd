import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { describe } from './lock-options';

/** What an `instanceName` may be: it goes into owner ids, which every backend stores and `query` reads back. */
const INSTANCE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Throws `InvalidLockOptionsError` unless `value` is undefined or an instance name: 1 to 64 letters, digits,
 * dots, dashes or underscores (a pod name, a container id). Returns it.
 */
export function assertInstanceName(value: unknown, path = 'instanceName'): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !INSTANCE_NAME.test(value)) {
    throw new InvalidLockOptionsError(path, `expected 1 to 64 letters, digits, dots, dashes or underscores (a pod name, say), got ${describe(value)}.`);
  }
  return value;
}

/**
 * Makes the owner ids of one lock manager: a unique id per acquisition. Its prefix names the host, the
 * process and, when the app gives one, the instance (`instanceName`), so that an operator looking at a stuck
 * key can tell who holds it (`LockService.query`); the random part makes it impossible to guess or to
 * collide. "host:pid:uuid", or "host:pid:instance:uuid".
 */
export class OwnerIds {
  // Computed once: os.hostname() is a system call, and neither the host nor the pid changes.
  private readonly prefix: string;

  constructor(instanceName?: string) {
    this.prefix = instanceName === undefined ? PROCESS_PREFIX : `${PROCESS_PREFIX}${instanceName}:`;
  }

  next(): string {
    return `${this.prefix}${randomUUID()}`;
  }
}

const PROCESS_PREFIX = `${hostname()}:${process.pid}:`;
