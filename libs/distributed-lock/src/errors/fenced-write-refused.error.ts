import { DistributedLockError } from './distributed-lock.error';

/**
 * A fenced write (`fencedUpdate`) changed no row: since the row was read, another holder wrote to it, or
 * the row already carries a token at least as high as the writer's. The writer's read is stale and its lock
 * (or permit) is probably lost: re-reading and writing again under the same token would be refused too.
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
        `${actualFence === undefined ? 'row not found' : `fence now ${actualFence}`}. ` +
        (actualFence !== undefined && actualFence >= token
          ? 'A holder with a newer token wrote first: this lock (or permit) is lost.'
          : 'Someone wrote since your read, or the fence was already at or above your token.'),
    );
  }
}
