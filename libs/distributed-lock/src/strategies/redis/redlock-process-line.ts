import type { WaitBudget } from '../../locking/lock-lease';
import { onBudgetAbort } from '../../locking/wait-for-wake';
import type { RedisChannelListener } from './redis-channel-listener';
import type { RedisLockKeyNames } from './redis-keys';

/**
 * The line of this process's contenders for each key of a Redlock strategy: contenders queue here in
 * arrival order and only the head asks the masters, so that our own callers never split the masters'
 * votes between them. The head is told of releases: by a holder of this process that gives the key back
 * to the masters, and by the masters' release notifications while the line listens for them.
 */
export class RedlockProcessLine {
  /** Local FIFO of contenders per key: only the head asks the masters. */
  private readonly queues = new Map<string, Array<() => void>>();
  /** Per key, the one contender of this process asking the masters (the head of the line): told of releases. */
  private readonly releaseWatchers = new Map<string, () => void>();
  /** The masters' subscriptions of each key's line (see listenForReleases). */
  private readonly subscriptions = new Map<string, { stops: Array<() => void>; over: boolean }>();

  constructor(
    /** One per master. */
    private readonly listeners: readonly RedisChannelListener[],
    private readonly keyNames: RedisLockKeyNames,
  ) {}

  /** True while contenders of this process line up for `key`. */
  has(key: string): boolean {
    return this.queues.has(key);
  }

  /**
   * Resolves a function that passes the turn on, or null when the budget ended while queued locally or
   * the function given to `onLeave` was called first (a hand-over made the turn unnecessary).
   */
  waitTurn(key: string, budget: WaitBudget, deadline: number, onLeave: (leave: () => void) => void): Promise<(() => void) | null> {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = [];
      this.queues.set(key, queue);
    }
    const line = queue;
    const passOn = (): void => {
      line.shift();
      if (line.length > 0) line[0]();
      else {
        this.queues.delete(key);
        this.stopListening(key);
      }
    };
    return new Promise((resolve) => {
      const entry = (): void => {
        clearTimeout(timer);
        stopWatchingAbort();
        resolve(passOn);
      };
      const giveUp = (): void => {
        const index = line.indexOf(entry);
        if (index > 0) line.splice(index, 1);
        else if (index === 0) return; // already our turn: entry() has run or will
        clearTimeout(timer);
        stopWatchingAbort();
        resolve(null);
      };
      const timer = setTimeout(giveUp, Math.max(0, deadline - Date.now()));
      const stopWatchingAbort = onBudgetAbort(budget, giveUp);
      onLeave(giveUp);
      line.push(entry);
      if (line.length === 1) entry();
    });
  }

  /**
   * The head of `key`'s line (the one contender asking the masters) hears of releases through `released`
   * until the returned function is called.
   */
  watchReleases(key: string, released: () => void): () => void {
    this.releaseWatchers.set(key, released);
    return () => {
      if (this.releaseWatchers.get(key) === released) this.releaseWatchers.delete(key);
    };
  }

  /** A holder of this process gave `key` back to the masters: the head of its line may ask them at once. */
  tellRelease(key: string): void {
    this.releaseWatchers.get(key)?.();
  }

  /**
   * While contenders of this process line up for a key and the first master does not keep their line (it
   * does not answer), one subscription per master to the key's channel serves them all: each release
   * there wakes whoever is at the head of the line. Not made while the first master answers: its
   * hand-over tells the one contender whose turn it is, where a release notification would wake every
   * waiting instance of every process. Subscribing per contender would cost five listens and five leaves
   * per critical section when the key is passed along locally. Made without waiting: a master that is down
   * must not hold up the others. A master whose subscription fails is not asked again while this line
   * lasts; the head still hears the other masters, and its re-check (`recheckInterval`) bounds what a
   * missed notification costs.
   */
  listenForReleases(key: string): void {
    if (this.subscriptions.has(key) || !this.queues.has(key)) return;
    const { channel } = this.keyNames.of(key);
    const subscription = { stops: [] as Array<() => void>, over: false };
    this.subscriptions.set(key, subscription);
    for (const listener of this.listeners) {
      listener
        .listen(channel, (message) => {
          if (message === 'r') this.tellRelease(key);
        })
        .then(
          (stop) => (subscription.over ? stop() : subscription.stops.push(stop)),
          () => undefined,
        );
    }
  }

  private stopListening(key: string): void {
    const subscription = this.subscriptions.get(key);
    if (!subscription) return;
    this.subscriptions.delete(key);
    subscription.over = true;
    for (const stop of subscription.stops) stop();
  }
}
