import type { WaitBudget } from '../locking/lock-lease';
import { budgetAborted, waitForWake } from '../locking/wait-for-wake';

/** How a wait behind a contender of this process ended. */
export type SameProcessWait<News> = { readonly outcome: 'told'; readonly news: News } | { readonly outcome: 'look-again' | 'timeout' };

/**
 * The writers of one strategy instance (one process) that queue in a server-side line (etcd keys,
 * ZooKeeper nodes), by the id of their entry in it. A writer whose entry is right behind another writer
 * of this process need not watch that entry on the server: the one ahead tells it when it releases
 * (`news`), or that it should look again when it leaves the line some other way (gave up, lost its
 * lease or session). That saves a watch and its cancel per hand-over.
 *
 * Nothing here replaces the server's word: the waiter looks at the server again after `recheckMs`
 * at most, because an entry can also vanish behind this process's back (an operator, an expired lease
 * not yet noticed); a strategy only acts on `news` when the server's order makes it safe.
 */
export class SameProcessLine<News> {
  private readonly present = new Set<string>();
  /** Entries that released the lock but whose removal from the server's line has not landed yet. */
  private readonly released = new Map<string, News>();
  private readonly listeners = new Map<string, (news: News | undefined) => void>();

  /** Our entry `id` is now in the server's line. */
  enter(id: string): void {
    this.present.add(id);
  }

  /** True while entry `id` is ours and in the server's line (a waiter behind it may wait here). */
  has(id: string): boolean {
    return this.present.has(id) || this.released.has(id);
  }

  /**
   * Entry `id` released the lock: its successor here learns `news`, now or, if it only finds the entry
   * while its removal is on the way to the server, as soon as it asks.
   */
  release(id: string, news: News): void {
    this.present.delete(id);
    this.released.set(id, news);
    this.tell(id, news);
  }

  /** Entry `id` is off the server's line; if it had not released, its successor here looks again. */
  leave(id: string): void {
    this.present.delete(id);
    if (!this.released.delete(id)) this.tell(id, undefined);
  }

  /**
   * Calls `listener` once when entry `id` releases or leaves; returns the way to stop listening. One
   * listener per entry: only the entry right behind it waits for it.
   */
  listen(id: string, listener: (news: News | undefined) => void): () => void {
    this.listeners.set(id, listener);
    return () => {
      if (this.listeners.get(id) === listener) this.listeners.delete(id);
    };
  }

  /**
   * Waits behind our entry `id` (call only while `has(id)`, in the same tick): until it tells us, the
   * budget ends, or `recheckMs` pass ('look-again': the caller asks the server who is ahead now).
   */
  async waitBehind(id: string, budget: WaitBudget, deadline: number, recheckMs: number): Promise<SameProcessWait<News>> {
    if (this.released.has(id)) return { outcome: 'told', news: this.released.get(id) as News };
    let heard: { news: News | undefined } | undefined;
    const woken = await waitForWake(budget, Math.min(deadline, Date.now() + recheckMs), (wake) =>
      this.listen(id, (news) => {
        heard = { news };
        wake();
      }),
    );
    if (woken && heard && heard.news !== undefined) return { outcome: 'told', news: heard.news };
    if (woken || (!budgetAborted(budget) && Date.now() < deadline)) return { outcome: 'look-again' };
    return { outcome: 'timeout' };
  }

  private tell(id: string, news: News | undefined): void {
    const listener = this.listeners.get(id);
    this.listeners.delete(id);
    listener?.(news);
  }
}
