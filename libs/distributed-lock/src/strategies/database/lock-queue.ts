import type { LockRequest } from '../../locking/lock-lease';
import { ticketOf, type LockQueueStatements } from './lock-queue.sql';
import type { DirectResult } from './mysql-direct';
import type { SqlDialect } from './sql-dialect';

/** How often the waiter at the head of the queue tries, in ms; each place further back waits one step more. */
const STEP_MS = 5;
/** A place's lease beyond two of its waiter's longest pauses: room for a slow statement. */
const LEASE_MARGIN_MS = 1_000;
/** How many times a write to the queue is sent when the server rolls it back to break a deadlock. */
const DEADLOCK_ATTEMPTS = 5;

/** One waiter's place in the queue of a key. */
interface Place {
  readonly key: string;
  /** The ticket, once the server gave it. */
  ticket: number | undefined;
  /** Settles when the join did (undefined when it failed). */
  joined: Promise<number | undefined>;
  readonly leaseMs: number;
  readonly pollGapMs: number;
  /** When (`Date.now()`) the next refused try pushes the place's lease. */
  renewAt: number;
  /** Live places ahead at the last refused try. 0 at the head, which it stays: places only join behind. */
  ahead: number;
  /** The place has told the table it is the head (`markHead`): the barging window runs. */
  markedHead: boolean;
}

/** What the queue needs of its strategy: the statements once prepared, and a way to send one. */
export interface LockQueueSite {
  ready(): Promise<{ readonly dialect: SqlDialect; readonly queue: LockQueueStatements }>;
  run(sql: string, parameters: unknown[]): Promise<DirectResult>;
}

/**
 * The places of this strategy's waiters in the lock table's queue of waiters (a ticket queue): a waiter
 * whose first try was refused takes a ticket, and from then on a free lease row goes only to the oldest
 * live ticket of its key (see `noOlderPlace`), so that a waiter of a slow or distant instance is not
 * overtaken for ever by those that happen to try right after each release; a contender without a place
 * may still take a free lock within the barging window of the head (see `noHeadPastWindow`). The head tries every few ms;
 * the others less often the further back they are. A place lives while its waiter tries: each refused try
 * pushes its lease when due, and a waiter that died holds nobody back once the lease has passed.
 */
export class LockQueue {
  private readonly places = new Map<string, Place>();

  constructor(private readonly site: LockQueueSite) {}

  /** Takes a place at the back of `request.key`'s queue; `pollGapMs`: the longest pause between two of its tries. */
  async join(request: LockRequest, pollGapMs: number): Promise<void> {
    const leaseMs = 2 * pollGapMs + LEASE_MARGIN_MS;
    const place: Place = { key: request.key, ticket: undefined, joined: Promise.resolve(undefined), leaseMs, pollGapMs, renewAt: 0, ahead: Number.POSITIVE_INFINITY, markedHead: false };
    this.places.set(request.owner, place);
    const joining = this.insert(place, request.owner);
    place.joined = joining.catch(() => undefined);
    await joining;
  }

  /**
   * False while others are ahead of `request`'s place (as its last refused try counted): its try would be
   * refused, and would only take the lease row's lock in the database for nothing. A waiter behind the
   * head then only counts again (`refused`), which reads the queue table alone.
   */
  mayTake(request: LockRequest): boolean {
    const place = this.places.get(request.owner);
    return place === undefined || place.ahead === 0 || place.ticket === undefined;
  }

  /** The ticket of `request`'s place; undefined when it has none (a first try, or `tryAcquire`). */
  ticketOf(request: LockRequest): number | undefined {
    return this.places.get(request.owner)?.ticket;
  }

  /** A try of `request` was refused: where its place now stands, its lease pushed when due (a place lost meanwhile is taken again). */
  async refused(request: LockRequest): Promise<void> {
    const place = this.places.get(request.owner);
    if (place?.ticket === undefined) return;
    const { queue } = await this.site.ready();
    if (Date.now() >= place.renewAt) {
      const renewed = await this.write(queue.renew, [place.leaseMs, place.ticket]);
      // Gone: the waiter was held up past its place's lease, and `sweepIdle` removed it. (A place whose lease
      // passed but is still there is live again from here, at its old position.)
      if ((renewed.affected ?? 0) === 0) {
        place.ahead = Number.POSITIVE_INFINITY;
        place.markedHead = false;
        await this.insert(place, request.owner);
      } else {
        place.renewAt = renewAfter(place);
      }
    }
    if (place.ahead !== 0) {
      const counted = await this.site.run(queue.ahead, [place.key, place.ticket]);
      place.ahead = Number((counted.records[0] as { ahead?: number | string } | undefined)?.ahead ?? 0);
    }
    if (place.ahead === 0 && !place.markedHead) {
      // From now on, contenders without a place may take the free lock for the barging window only.
      await this.write(queue.markHead, [place.ticket]);
      place.markedHead = true;
    }
  }

  /** The pause before the next try of a queued `request`; undefined without a place. */
  nextTryIn(request: LockRequest): number | undefined {
    const place = this.places.get(request.owner);
    if (!place) return undefined;
    return Math.min(place.pollGapMs, STEP_MS * (Math.min(place.ahead, 1_000) + 1));
  }

  /**
   * The waiter of `request` left the queue (granted, or its wait ended): its place goes, and the next place
   * of the key is marked head from now. Undefined (nothing sent) when it has no place, as most grants.
   */
  leave(request: LockRequest): Promise<void> | undefined {
    const place = this.places.get(request.owner);
    if (!place) return undefined;
    this.places.delete(request.owner);
    return this.remove(place);
  }

  private async remove(place: Place): Promise<void> {
    const ticket = place.ticket ?? (await place.joined);
    if (ticket === undefined) return;
    try {
      const { queue } = await this.site.ready();
      await this.write(queue.leave, [ticket]);
      // The next waiter is the head from now: the barging window ahead of it starts (see noHeadPastWindow).
      const found = await this.site.run(queue.head, [place.key]);
      const head = (found.records[0] as { head?: number | string | null } | undefined)?.head;
      if (head !== null && head !== undefined) await this.write(queue.markNextHead, [Number(head)]);
    } catch {
      // Left behind, the place ends with its lease.
    }
  }

  /**
   * A write to the queue, sent again when the server chose it to break a deadlock (it then changed nothing).
   * Each write names one row by its ticket, but a take-over reading the queue share-locks its rows on InnoDB.
   */
  private async write(sql: string, parameters: unknown[]): Promise<DirectResult> {
    const { dialect } = await this.site.ready();
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.site.run(sql, parameters);
      } catch (error) {
        if (attempt >= DEADLOCK_ATTEMPTS || !dialect.isDeadlock(error)) throw error;
      }
    }
  }

  private async insert(place: Place, owner: string): Promise<number> {
    const { dialect, queue } = await this.site.ready();
    const result = await this.write(queue.join, [place.key, owner, place.leaseMs]);
    place.ticket = ticketOf(dialect, result);
    place.renewAt = renewAfter(place);
    // The wait ended while the ticket was being taken (a bound passed): it goes at once.
    if (this.places.get(owner) !== place) await this.write(queue.leave, [place.ticket]).catch(() => undefined);
    return place.ticket;
  }
}

/** When a place's lease is to be pushed: early enough that a try one longest pause later still finds it live. */
function renewAfter(place: Place): number {
  return Date.now() + place.leaseMs - place.pollGapMs - LEASE_MARGIN_MS / 2;
}
