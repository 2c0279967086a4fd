import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * A unique id for one acquisition. Its prefix names the host and process so that an operator looking at
 * a stuck key can tell who holds it; the random part makes it impossible to guess or to collide.
 */
export function createOwnerId(): string {
  return `${OWNER_PREFIX}${randomUUID()}`;
}

// Computed once: os.hostname() is a system call, and neither the host nor the pid changes.
const OWNER_PREFIX = `${hostname()}:${process.pid}:`;
