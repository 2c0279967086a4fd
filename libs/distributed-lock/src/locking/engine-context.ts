import type { DeadlineClock } from './deadline-clock';
import type { LockEvents } from './lock-events';
import type { LeaseGrant } from './lock-lease';
import type { LockStrategy } from './lock-strategy.interface';
import type { OwnerIds } from './owner-id';
import type { ServerAnswers } from './server-answers';

/**
 * What the waits and the held locks of one lock manager share: its clock, its name and bound, its events,
 * whether it is closed, and the count of work that outlives its caller, which `close()` waits for.
 */
export interface EngineContext {
  readonly clock: DeadlineClock;
  /** The strategy's name in errors and events. */
  readonly name: string;
  /** Bound of one server call, in ms. */
  readonly operationTimeout: number;
  readonly events: LockEvents;
  readonly closed: boolean;
  /** Work in the background (a strategy still leaving its queue, a grant given back): close() waits for it. */
  readonly background: BackgroundWork;
  /** When the server last answered any wait: evidence that it is up for a wait still without its own answer. */
  readonly answers: ServerAnswers;
  /** Makes the owner id of each acquisition. */
  readonly owners: OwnerIds;
  /** Gives back a grant nobody will use (it came after its caller gave up), in the background. */
  releaseOrphan(grant: LeaseGrant | null, ops: LockStrategy): Promise<void>;
}

/**
 * A count of work under way, and a promise of its end made only when someone asks (close()): nothing is
 * allocated per piece of work.
 */
export class BackgroundWork {
  private running = 0;
  private waiters: Array<() => void> | undefined;

  enter(): void {
    this.running += 1;
  }

  exit(): void {
    this.running -= 1;
    if (this.running > 0 || !this.waiters) return;
    const waiters = this.waiters;
    this.waiters = undefined;
    for (const done of waiters) done();
  }

  /** Resolves once no work is under way. */
  drained(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => (this.waiters ??= []).push(resolve));
  }
}
