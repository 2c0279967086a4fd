import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';

/** What the sweeper needs of a session: its client, and word when it ends. */
export interface OrphanSweepSession {
  client(): Promise<ZooKeeperLockClient>;
  onExpired(listener: () => void): () => void;
}

/** How often orphans are looked for again while the server does not answer. */
const DEFAULT_SWEEP_MS = 250;

/**
 * Contender nodes that must go but may still live: a release or a give-up whose delete was lost with the
 * connection, or a create whose answer was lost and never found again. The session outlives a lost
 * connection (the client reconnects, to another ensemble member after a leader election), and with it
 * such a node, which would block every contender behind it for as long as this process runs.
 *
 * Each orphan is a lock node and a name prefix: a node's full name, or the protection prefix of a create
 * whose outcome is unknown (every node whose name starts with it is ours). They are deleted again, every
 * `sweepMs`, until a look-up answers; an ended session takes its ephemeral nodes with it, and the list.
 */
export class ZooKeeperOrphans {
  private readonly pending = new Map<string, { readonly lockPath: string; readonly namePrefix: string }>();
  private timer: NodeJS.Timeout | undefined;
  private stopWatchingSession: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly session: OrphanSweepSession,
    private readonly sweepMs = DEFAULT_SWEEP_MS,
  ) {}

  /** How many orphans are still to be deleted. */
  get size(): number {
    return this.pending.size;
  }

  /** Remembers `lockPath/namePrefix*` for deletion and schedules a sweep. */
  adopt(lockPath: string, namePrefix: string): void {
    if (this.stopped) return; // the session is closing, and takes every ephemeral node with it
    this.pending.set(`${lockPath}/${namePrefix}`, { lockPath, namePrefix });
    this.stopWatchingSession ??= this.session.onExpired(() => {
      this.stopWatchingSession = undefined;
      this.pending.clear();
    });
    this.schedule();
  }

  /** Forgets every orphan and sweeps no more: the session is being closed, which deletes them all. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.stopWatchingSession?.();
    this.stopWatchingSession = undefined;
    this.pending.clear();
  }

  private schedule(): void {
    if (this.stopped || this.timer || this.pending.size === 0) return;
    this.timer = setTimeout(() => void this.sweep(), this.sweepMs);
    this.timer.unref?.();
  }

  private async sweep(): Promise<void> {
    await Promise.all(
      [...this.pending].map(([id, orphan]) =>
        this.deleteMatching(orphan.lockPath, orphan.namePrefix).then(
          () => this.pending.delete(id),
          (error: unknown) => {
            // Refused (NOAUTH): an ACL change took our permission; every later sweep would be refused
            // alike. The node goes with our session. Anything else: still unreachable, next sweep.
            if (zkErrorCode(error) === ZK_ERRORS.NO_AUTH) this.pending.delete(id);
          },
        ),
      ),
    );
    this.timer = undefined;
    this.schedule();
  }

  private async deleteMatching(lockPath: string, namePrefix: string): Promise<void> {
    const client = await this.session.client();
    let children: string[];
    try {
      children = await client.get_children(lockPath, false);
    } catch (error) {
      if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return; // the lock node is gone, and every child with it
      throw error;
    }
    await Promise.all(
      children
        .filter((name) => name.startsWith(namePrefix))
        .map((name) =>
          client.delete_(`${lockPath}/${name}`, -1).catch((error: unknown) => {
            if (zkErrorCode(error) !== ZK_ERRORS.NO_NODE) throw error;
          }),
        ),
    );
  }
}
