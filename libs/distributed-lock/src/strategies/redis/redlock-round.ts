import type { RedisLockClient } from './redis-client.type';
import type { OwnedRedisClient } from './redis-connection';

/** ioredis connection states in which a master cannot answer now: lost, waiting to reconnect, or closed. */
const DOWN_STATUSES = new Set(['reconnecting', 'close', 'end']);

/** What one master said in a round. */
export interface NodeOutcome {
  /** It said yes (granted, extended, released, up). */
  readonly held: boolean;
  /** It answered at all, in time. */
  readonly answered: boolean;
  /** Why it did not answer: the client's error, or a plain one for a timeout or a connection that is down (the strategy's `LockBackendUnavailableError` carries it as `cause`). */
  readonly error?: unknown;
}

/**
 * One Redlock round: `operation` on every master in parallel, bounded by `timeoutMs`. With `enough`,
 * resolves as soon as that many masters said yes (the slower ones still run; for an acquisition a later
 * yes only sets a key the release clears, and each connection runs the release after the acquire); the
 * outcomes not in yet then read as not held, not answered. One timer for the round, not one per master:
 * a round is on the path of every lock.
 */
export function runOnMasters(
  nodes: readonly OwnedRedisClient[],
  timeoutMs: number,
  operation: (client: RedisLockClient, index: number) => Promise<boolean>,
  enough = Infinity,
  /** Send also on connections that are down (ioredis queues it until they reconnect); they count as not answered. */
  evenIfDown = false,
  /** A master whose outcome must be in before `enough` ends the round early (the first master keeps the line). */
  awaited?: number,
  /**
   * Told of a master's call that failed, also after the round ended (a give-back to send again), from the
   * round's own reaction to the call: no promise more per master.
   */
  failed?: (index: number, error: unknown) => void,
): Promise<NodeOutcome[]> {
  return new Promise((resolve) => {
    const outcomes = new Array<NodeOutcome | undefined>(nodes.length);
    let pending = nodes.length;
    let yes = 0;
    let done = false;
    const finish = (): void => {
      done = true;
      clearTimeout(timer);
      resolve(Array.from(outcomes, (outcome) => outcome ?? { held: false, answered: false }));
    };
    const settle = (index: number, outcome: NodeOutcome): void => {
      if (done || outcomes[index]) return;
      outcomes[index] = outcome;
      pending -= 1;
      if (outcome.held) yes += 1;
      if (pending === 0 || (yes >= enough && (awaited === undefined || outcomes[awaited] !== undefined))) finish();
    };
    const timer = setTimeout(() => {
      // After an event-loop stall, this timer runs before the answers that arrived meanwhile are read:
      // give them one turn of the loop (I/O is read before setImmediate callbacks) before counting them
      // out. A late yes is still a yes; the validity check counts the time it took.
      setImmediate(() => {
        const late = new Error(`no answer within ${timeoutMs} ms`);
        for (let i = 0; i < outcomes.length; i += 1) settle(i, { held: false, answered: false, error: late });
      });
    }, timeoutMs);
    nodes.forEach(({ client }, index) => {
      // A master whose connection is down answers nothing: count it out now instead of after the
      // timeout. A first connection still being made ("wait", "connecting") may answer in time.
      if (DOWN_STATUSES.has(client.status)) {
        settle(index, { held: false, answered: false, error: new Error(`connection ${client.status}`) });
        if (evenIfDown && client.status !== 'end') operation(client, index).catch((error: unknown) => failed?.(index, error));
        return;
      }
      operation(client, index).then(
        (held) => settle(index, { held, answered: true }),
        // WRONGTYPE: the key holds the other kind of value, another owner's vote (an instance that lists the
        // masters in another order, whose first master keeps a hash): a no, not a master that did not answer.
        (error: unknown) => {
          failed?.(index, error);
          settle(index, isWrongType(error) ? { held: false, answered: true } : { held: false, answered: false, error });
        },
      );
    });
  });
}

function isWrongType(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('WRONGTYPE');
}
