import { DistributedLockError } from './distributed-lock.error';

/**
 * A fenced write (`fencedUpdate`) changed no row. When the row now carries a token above the writer's, a
 * newer holder wrote: the writer's lock is lost, and any write to the row under its token will be refused
 * (a semaphore's permit may still be valid, several are at once: the row went to a later permit).
 * Otherwise the row changed since the writer read it (an older holder's late write, or the writer's own
 * write under the same token): the change computed from that read is refused, and a change computed from a
 * fresh read may be written under the same token.
 */
export class FencedWriteRefusedError extends DistributedLockError {
  constructor(
    /** Entity or table name. */
    readonly entity: string,
    /** The row's identifier, as given by the caller. */
    readonly id: unknown,
    /** The writer's fencing token. */
    readonly token: number,
    /** The fence the writer read with the row. */
    readonly seenFence: number,
    /** The fence found after the refusal; undefined when the row is gone. */
    readonly actualFence?: number,
  ) {
    super(
      `Fenced write to ${entity} ${JSON.stringify(id)} refused: token ${token}, fence read ${seenFence}, ` +
        (actualFence === undefined
          ? 'row not found.'
          : `fence now ${actualFence}. ` +
            (actualFence > token
              ? 'A holder with a newer token wrote first: this lock is lost (a permit, which shares its semaphore with newer ones, has lost this row to a later permit).'
              : 'The row changed since it was read (a late write of an older holder, or your own under this token): compute the change again from a fresh read.')),
    );
  }
}
