import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * A unique id for one acquisition. Its prefix names the host and process so that an operator looking at
 * a stuck key can tell who holds it; the random part makes it impossible to guess or to collide.
 */
export function createOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomUUID()}`;
}
