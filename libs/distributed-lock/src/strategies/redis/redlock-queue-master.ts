import type { RedisChannelListener } from './redis-channel-listener';
import type { RedisLockClient } from './redis-client.type';
import { RedisInbox } from './redis-inbox';
import type { RedisLockKeys } from './redis-keys';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, LEAVE_QUEUE_SCRIPT, RELEASE_SCRIPT } from './redis-lock.scripts';
import { RedisScript } from './redis-script';
import { REDLOCK_LINE_HAND_OVER_SCRIPT } from './redlock.scripts';

/**
 * The first master of a Redlock keeps the line. Its vote is taken with the fair single-Redis scripts: a
 * contender that finds the key busy joins a FIFO queue there, and a release hands the first master's vote
 * straight to the head of that queue and tells it on its instance's inbox. The head then collects the
 * other masters' votes; a contender whose first-master vote is refused does not compete for the others.
 * So under contention one contender at a time asks the masters, in arrival order, instead of every waiter
 * of every process racing after each release (which split the votes and mostly wasted the rounds).
 *
 * Safety stays the majority's: the first master's key is one vote like any other, and a contender whose
 * first master does not answer (down, slow) falls back to plain Redlock on the others.
 */
export class RedlockQueueMaster {
  readonly inbox: RedisInbox;
  /**
   * The single-Redis keys of a lock, without the fence: Redlock has no fencing tokens to count. The lock
   * key stands in the fence's place (the scripts read that as "no fence"): an empty key name would be
   * outside the namespace, and the ACL recipe's key pattern would refuse every call on this master.
   */
  private readonly keyCache = new WeakMap<RedisLockKeys, readonly string[]>();
  private readonly scripts = {
    acquire: new RedisScript(ACQUIRE_SCRIPT),
    extend: new RedisScript(EXTEND_SCRIPT),
    release: new RedisScript(RELEASE_SCRIPT),
    leave: new RedisScript(LEAVE_QUEUE_SCRIPT),
    handOver: new RedisScript(REDLOCK_LINE_HAND_OVER_SCRIPT),
  };

  constructor(
    listener: RedisChannelListener,
    namespace: string,
    /** How long a queued contender stays in line without refreshing its place, and how long a hand-over waits for its claim, in ms. */
    private readonly claimMs: number,
  ) {
    this.inbox = new RedisInbox(listener, namespace);
  }

  /**
   * The first master's vote for `owner`. `inLine`: join (or stay in) the queue when it is refused, and take
   * the key when the queue hands it over. True when `owner` holds the key (again) for `ttlMs`.
   */
  async acquire(client: RedisLockClient, keys: RedisLockKeys, owner: string, ttlMs: number, inLine: boolean): Promise<boolean> {
    const reply = await this.scripts.acquire.run(client, this.keysOf(keys), [owner, keys.channel, ttlMs, 0, inLine ? '1' : '0', this.claimMs, 'x', this.inbox.channel]);
    return reply[0] === 1;
  }

  async extend(client: RedisLockClient, keys: RedisLockKeys, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.scripts.extend.run(client, this.keysOf(keys), [owner, keys.channel, ttlMs])) === 1;
  }

  /** Releases `owner`'s vote, handing it to the head of the queue. True when it was `owner`'s. */
  async release(client: RedisLockClient, keys: RedisLockKeys, owner: string): Promise<boolean> {
    return (await this.scripts.release.run(client, this.keysOf(keys), [owner, keys.channel])) === 1;
  }

  /**
   * Ends `owner`'s vote whatever its hold count, as an operator breaking the lock would, handing it to the
   * head of the queue as a release does. True when it was `owner`'s.
   */
  async breakHold(client: RedisLockClient, keys: RedisLockKeys, owner: string): Promise<boolean> {
    return (await this.scripts.release.run(client, this.keysOf(keys), [owner, keys.channel, '1', 0, '1'])) === 1;
  }

  /** A local hand-over: `owner`'s vote becomes `successor`'s for `ttlMs`, the line left as it is. True when it was `owner`'s. */
  async handOver(client: RedisLockClient, keys: RedisLockKeys, owner: string, successor: string, ttlMs: number): Promise<boolean> {
    return (await this.scripts.handOver.run(client, [keys.keys[0]], [owner, successor, ttlMs])) === 1;
  }

  /** Leaves only `owner`'s place in the line, if it has one; a vote it holds here stays (see LEAVE_QUEUE_SCRIPT). */
  async leavePlace(client: RedisLockClient, keys: RedisLockKeys, owner: string): Promise<void> {
    await this.scripts.leave.run(client, this.keysOf(keys), [owner, keys.channel]);
  }

  /** Leaves the queue; a vote handed over meanwhile goes on to the next in line. */
  async leave(client: RedisLockClient, keys: RedisLockKeys, owner: string): Promise<void> {
    const reply = await this.scripts.leave.run(client, this.keysOf(keys), [owner, keys.channel]);
    if (reply[0] === 1) await this.release(client, keys, owner);
  }

  private keysOf(keys: RedisLockKeys): readonly string[] {
    let unfenced = this.keyCache.get(keys);
    if (!unfenced) {
      const [lock, queue, waiters, , readers] = keys.keys;
      unfenced = [lock, queue, waiters, lock, readers];
      this.keyCache.set(keys, unfenced);
    }
    return unfenced;
  }
}
