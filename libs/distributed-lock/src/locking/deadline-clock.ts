/** A runtime timer this late (ms) gives the loop one turn to read its sockets first (see `onTimer`). */
const LATE_FIRE_MS = 20;
/** While a bound is armed, the runtime timer fires at least this often (ms): how finely a stall is measured. */
const STALL_CHECK_MS = 100;
/**
 * A runtime timer this late (ms) is a stall that bounds are not charged for: the process was frozen (SIGSTOP,
 * a paused VM). Below it, a busy loop's lag counts against the bound as wall time did, so that load alone
 * never stretches the bounds of a whole application's calls.
 */
const STALL_CREDIT_MS = 200;

/**
 * One timer for every deadline of a lock manager: the bound of each server call, each wait's deadline and
 * silence watch, each lease's renewal and end, each retry pause. Arming a deadline links an entry into a
 * list; nothing is armed with the runtime per acquisition. The one runtime timer is set for the earliest
 * deadline, and reset only when it fires or when an earlier one comes.
 *
 * Deadlines of one duration (every call's `operationTimeout`, every lease renewal of one ttl) end in the
 * order they were armed, so each duration has a list of its own, kept in that order for free: arming and
 * cancelling are O(1), with no garbage left behind. The earliest deadline is the earliest list head.
 *
 * Times are `performance.now()` (monotonic): a wall clock that jumps neither fires a deadline early nor
 * holds it back. A bound (`bound`) measures the time the process ran rather than the time that passed: a
 * server is not blamed for an answer the process was frozen while it came (SIGSTOP, a paused VM). The
 * runtime timer sees such a stall by firing late, so while a bound is armed it fires at least every
 * `STALL_CHECK_MS`, and a due bound is put off by the stall it lived through (the first whole, later ones up to
 * the bound's duration in all). The runtime timer is unref'd
 * while only bounds are armed (a server call in flight keeps
 * the process alive through its socket), and ref'd while someone waits on a deadline alone (a retry pause
 * over an embedded store has no socket that would).
 */
export class DeadlineClock {
  private readonly lanes = new Map<number, Lane>();
  private timer: NodeJS.Timeout | undefined;
  /** When the runtime timer fires (performance.now()), while one is set. */
  private timerAt = Number.POSITIVE_INFINITY;
  /** Armed deadlines that must keep the process alive. */
  private keepingAlive = 0;
  /** Armed bounds (see `bound`): while there are some, stalls are watched for. */
  private bounds = 0;
  private firing = false;

  /**
   * Calls `fire` once `ms` from now, unless the returned deadline is cancelled first. `keepAlive`: the
   * process stays alive until then (a pause someone awaits); default false.
   */
  after(ms: number, fire: () => void, keepAlive = false): Deadline {
    return this.add(ms, fire, keepAlive, false);
  }

  /**
   * The bound of a server call: calls `fire` once the process has run for `ms` from now (as `after`, but
   * time it stood still does not count), unless cancelled first. Never keeps the process alive.
   */
  bound(ms: number, fire: () => void): Deadline {
    this.bounds += 1;
    const entry = this.add(ms, fire, false, true);
    entry.creditLeft = entry.lane.duration;
    return entry;
  }

  private add(ms: number, fire: () => void, keepAlive: boolean, isBound: boolean): Deadline {
    const now = performance.now();
    const duration = Math.max(0, Math.ceil(ms));
    const entry = new Deadline(this, this.laneOf(duration), now + duration, fire, keepAlive, isBound);
    entry.lane.push(entry);
    if (keepAlive) this.keepingAlive += 1;
    // While firing, the loop sets the timer for whatever is left once it is done.
    if (this.firing) return entry;
    const wakeAt = isBound ? Math.min(entry.at, now + STALL_CHECK_MS) : entry.at;
    if (wakeAt < this.timerAt) this.arm(wakeAt);
    else if (keepAlive && this.keepingAlive === 1) this.timer?.ref();
    return entry;
  }

  private laneOf(duration: number): Lane {
    let lane = this.lanes.get(duration);
    if (!lane) {
      lane = new Lane(duration);
      this.lanes.set(duration, lane);
    }
    return lane;
  }

  /** Number of deadlines armed now (for tests and the cost probe). */
  get armed(): number {
    let count = 0;
    for (const lane of this.lanes.values()) count += lane.size;
    return count;
  }

  /** Stops the runtime timer and forgets every deadline without firing it (the manager closed). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    for (const lane of this.lanes.values()) lane.clear();
    this.lanes.clear();
    this.keepingAlive = 0;
    this.bounds = 0;
  }

  /** @internal an entry left its lane (fired or cancelled). */
  removed(entry: Deadline): void {
    if (entry.isBound) this.bounds -= 1;
    if (entry.keepAlive) {
      this.keepingAlive -= 1;
      if (this.keepingAlive === 0) this.timer?.unref();
    }
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.onTimer, Math.max(0, at - performance.now()));
    if (this.keepingAlive === 0) this.timer.unref();
  }

  private readonly onTimer = (): void => {
    const now = performance.now();
    const late = now - this.timerAt;
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    // Far past its time, the process was frozen (SIGSTOP, a paused VM) or its loop blocked, and Node runs
    // timers before it reads its sockets: an answer that came meanwhile is waiting there. One turn of the
    // loop lets it in before any deadline decides that a server was silent or a call timed out; and the
    // bounds armed before are not charged for the stall (see `fireDue`).
    if (late > LATE_FIRE_MS) {
      if (late > STALL_CREDIT_MS) this.creditStall(now - late, late);
      setImmediate(this.fireDue);
      return;
    }
    this.fireDue();
  };

  private readonly fireDue = (): void => {
    if (this.firing) return;
    this.firing = true;
    try {
      // Each due entry fires once; a callback that arms a new deadline adds it behind, to be seen below.
      for (;;) {
        const now = performance.now();
        let due: Deadline | undefined;
        let next = Number.POSITIVE_INFINITY;
        for (const lane of this.lanes.values()) {
          const head = lane.head;
          if (!head) continue;
          if (head.at <= now) {
            due = head;
            break;
          }
          if (head.at < next) next = head.at;
        }
        if (!due) {
          this.dropEmptyLanes();
          if (this.bounds > 0) next = Math.min(next, now + STALL_CHECK_MS);
          if (next !== Number.POSITIVE_INFINITY) this.arm(next);
          return;
        }
        // The first stall a bound lives through is given back whole, however long (one freeze of the process:
        // its server is not blamed for it); the next ones only up to the bound's duration in all, so that a
        // process stalled again and again (a loop blocked over and over) still ends it.
        const credit = due.creditedOnce ? Math.min(due.stalledMs, due.creditLeft) : due.stalledMs;
        if (credit > 0 && due.at + credit > now) {
          // A bound that lived through a stall ends that much later than it was due (not than now: the stall
          // has passed already).
          due.creditedOnce = true;
          due.creditLeft = Math.max(0, due.creditLeft - credit);
          this.putOff(due, now, due.at + credit - now);
          continue;
        }
        try {
          due.fireNow();
        } catch (error) {
          // As a throwing timer callback would: an uncaught exception, after the other deadlines are served.
          queueMicrotask(() => {
            throw error;
          });
        }
      }
    } finally {
      this.firing = false;
    }
  };

  /**
   * The process stood still for `ms` up to now, from about `since` (when the late timer was due): each bound
   * armed before then lived through it. Bounds armed since were armed by a running process, after it.
   */
  private creditStall(since: number, ms: number): void {
    if (this.bounds === 0) return;
    for (const lane of this.lanes.values()) {
      for (let entry = lane.head; entry; entry = entry.next) {
        if (entry.isBound && entry.at - lane.duration < since) entry.stalledMs += ms;
      }
    }
  }

  private putOff(entry: Deadline, now: number, ms: number): void {
    entry.lane.unlink(entry);
    entry.lane = this.laneOf(Math.ceil(ms));
    entry.at = now + entry.lane.duration;
    entry.stalledMs = 0;
    entry.lane.push(entry);
  }

  private dropEmptyLanes(): void {
    for (const [duration, lane] of this.lanes) if (!lane.head) this.lanes.delete(duration);
  }
}

/** One armed deadline. `cancel()` is idempotent and cheap; a fired deadline does nothing on cancel. */
export class Deadline {
  /** @internal */ prev: Deadline | undefined;
  /** @internal */ next: Deadline | undefined;
  private done = false;

  /** @internal */
  constructor(
    private readonly clock: DeadlineClock,
    /** @internal */ public lane: Lane,
    /** When it fires (performance.now()); a bound that lived through a stall is put off. */
    public at: number,
    private readonly fire: () => void,
    /** @internal */ readonly keepAlive: boolean,
    /** @internal a bound of a server call (`DeadlineClock.bound`). */
    readonly isBound: boolean,
  ) {}

  /** @internal the time (ms) a bound's process stood still since it was armed or last put off. */
  stalledMs = 0;
  /** @internal how much longer (ms) a bound may still be put off for stalls after the first: its duration, in all. */
  creditLeft = 0;
  /** @internal whether a stall was given back to this bound already (the first is given back whole). */
  creditedOnce = false;

  /** True until it fired or was cancelled. */
  get pending(): boolean {
    return !this.done;
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.lane.unlink(this);
    this.clock.removed(this);
  }

  /** @internal */
  fireNow(): void {
    this.cancel();
    this.fire();
  }
}

/** @internal The deadlines of one duration, in the order they end. */
export class Lane {
  head: Deadline | undefined;
  private tail: Deadline | undefined;
  size = 0;

  constructor(readonly duration: number) {}

  push(entry: Deadline): void {
    entry.prev = this.tail;
    if (this.tail) this.tail.next = entry;
    else this.head = entry;
    this.tail = entry;
    this.size += 1;
  }

  unlink(entry: Deadline): void {
    if (entry.prev) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else this.tail = entry.prev;
    entry.prev = undefined;
    entry.next = undefined;
    this.size -= 1;
  }

  clear(): void {
    this.head = undefined;
    this.tail = undefined;
    this.size = 0;
  }
}
