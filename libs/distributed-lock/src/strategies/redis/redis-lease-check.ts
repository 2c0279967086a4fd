import type { LeaseLostListener } from '../../locking/lock-strategy.interface';
import type { RedisLockClient } from './redis-client.type';

/** One lease held through the client: how to ask the server whether its owner still holds it, and who to tell. */
interface CheckedLease {
  readonly held: () => Promise<boolean>;
  readonly listener: LeaseLostListener;
}

/**
 * Every lease (lock or permit) held through one client, checked on the server each time the client
 * (re)connects. A reconnection may land on another server than the one that granted the lease: the
 * replica Sentinel promoted after the master died or froze (its grants that had not reached the replica
 * are gone there, and another process may already hold them), or a server restarted without its data.
 * The holder is told at once (`removed`) rather than at its next extension, or at its lease's end when it
 * has none. A check that fails (the server went away again) is left to the lease's own watchdog.
 */
export class RedisLeaseCheck {
  private readonly leases = new Map<string, CheckedLease>();
  private readonly onReady = (): void => void this.checkAll();

  constructor(private readonly client: Pick<RedisLockClient, 'on' | 'off'>) {
    client.on('ready', this.onReady);
  }

  /**
   * Checks the lease named `id` (unique per kind, key and owner) at every reconnection until the returned
   * function is called: `held` asks the server, `listener` hears that the lease is gone.
   */
  watch(id: string, held: () => Promise<boolean>, listener: LeaseLostListener): () => void {
    const entry: CheckedLease = { held, listener };
    this.leases.set(id, entry);
    return () => {
      if (this.leases.get(id) === entry) this.leases.delete(id);
    };
  }

  /** Stops listening to the client (a user's client outlives the strategy). */
  close(): void {
    this.client.off('ready', this.onReady);
    this.leases.clear();
  }

  private async checkAll(): Promise<void> {
    await Promise.all(
      [...this.leases].map(async ([id, entry]) => {
        const held = await entry.held().catch(() => true);
        // Still watched: a lease released while the check ran is nobody's loss.
        if (!held && this.leases.get(id) === entry) {
          this.leases.delete(id);
          entry.listener('removed');
        }
      }),
    );
  }
}
