import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { abortableDelay } from '../../locking/abortable-delay';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import type { RedlockLocalHandOver } from './redlock-local-hand-over';
import type { RedlockProcessLine } from './redlock-process-line';
import type { RedlockQueueMaster } from './redlock-queue-master';

/**
 * How one round on the masters went. The outcome when not granted: `queued` (the first master said no:
 * wait for its hand-over), `first` (the first master's vote is ours, a majority is not yet: the last
 * holder's keys are on their way out), `split` (the first master did not answer, and other contenders
 * split the votes) or `refused`.
 */
export interface RedlockAttempt {
  readonly grant: LeaseGrant | null;
  readonly outcome: 'granted' | 'queued' | 'first' | 'split' | 'refused';
}

/** What a wait needs of the Redlock strategy. */
export interface RedlockWaitDeps {
  readonly processLine: RedlockProcessLine;
  readonly localHandOver: RedlockLocalHandOver;
  readonly queueMaster: RedlockQueueMaster;
  /** Bound of a wait for a release notification before trying again, in ms. */
  readonly recheckMs: number;
  /** True when the first master's connection is up (its line is kept only then). */
  firstMasterReady(): boolean;
  /** Waits for `work` (whatever its outcome), but no longer than one node timeout. */
  atMostNodeTimeout(work: Promise<unknown>): Promise<void>;
  /** One round on every master under `redisOwner`, as a contender in the first master's line. */
  attempt(request: LockRequest, redisOwner: string, firstMasterFirst: boolean): Promise<RedlockAttempt>;
  /** Leaves the first master's line under `redisOwner` and drops its votes on the others. */
  leaveLine(key: string, redisOwner: string, ttlMs: number): Promise<void>;
  release(lease: LeaseGrant): Promise<boolean>;
}

/** Counts of the news a waiter reacts to, read before a round so that news arriving during it is not lost. */
interface Seen {
  readonly releases: number;
  readonly handOvers: number;
}

/**
 * One contender's wait for a key held elsewhere: its turn among this process's contenders, then rounds on
 * the masters, each followed by a pause until news (the first master's hand-over, or a release), until it
 * is granted the key, handed it by a holder of this process, or out of budget.
 */
export class RedlockWait {
  /** A lock handed over by a holder of this process. */
  private handed: LeaseGrant | undefined;
  /** Wakes the pause in progress, if any. */
  private wake: (() => void) | undefined;
  /** Leaves this process's line (once handed the lock, there is nothing left to wait for). */
  private leaveProcessLine: (() => void) | undefined;
  /**
   * What the pause waits for: the first master's hand-over (told on our inbox; the other masters' release
   * notifications are ignored then, or every waiter of every process would wake and ask), or a release on
   * the masters (notified on the key's channel) when we are next or the first master does not answer.
   */
  private waitingFor: 'hand-over' | 'release' = 'release';
  private releases = 0;
  private handOvers = 0;
  /** In the first master's line: to be left unless our own round granted the key. */
  private inLine = false;
  /** Rounds in a row that split the votes (the first master silent): the random pause grows with them. */
  private splitRounds = 0;
  private split = false;
  /**
   * Rounds in a row as next in line: the last holder's keys are normally gone within a round trip, but a
   * holder that died leaves them until its lease ends, so the pause between rounds grows.
   */
  private nextRounds = 0;
  private nextInLine = false;
  private handOversBeforeRound = 0;
  /** While a majority is unreachable, the wait goes on until the budget ends, then reports the outage itself. */
  private unavailable: LockBackendUnavailableError | undefined;

  constructor(
    private readonly deps: RedlockWaitDeps,
    private readonly request: LockRequest,
    private readonly budget: WaitBudget,
    private readonly deadline: number,
  ) {}

  async run(): Promise<LeaseGrant | null> {
    const { deps, request, budget } = this;
    // Behind a contender of this process (it reached the masters): waiting here is no sign of a silent server.
    if (deps.processLine.has(request.key) || deps.localHandOver.heldHere(request.key)) budget.serverAnswered?.();
    // A local holder may hand the lock to us instead of releasing it on the masters. We are listed for
    // that from the moment we queue here, in arrival order, so that a release finds its successor even
    // before the successor's turn to ask the masters has come (it then leaves the line at once).
    const stopAwaitingHandover = deps.localHandOver.awaitHandover(request, (grant) => {
      this.handed = grant;
      this.leaveProcessLine?.();
      this.wake?.();
    });
    const turn = await deps.processLine.waitTurn(request.key, budget, this.deadline, (leave) => (this.leaveProcessLine = leave));
    if (!turn) {
      stopAwaitingHandover();
      return this.keepLateHandover();
    }
    // Our place in the first master's line, for the whole wait (a new id per round would lose it).
    const redisOwner = deps.localHandOver.newRedisOwner(request.owner);
    // The masters' release notifications reach the head of the local line through the line's subscription
    // (see RedlockProcessLine.listenForReleases); a holder of this process that gives the key back to the
    // masters may tell us directly, sparing us the wait for the notification.
    const stopWatchingReleases = deps.processLine.watchReleases(request.key, () => {
      this.releases += 1;
      if (this.waitingFor === 'release') this.wake?.();
    });
    const expecting = deps.queueMaster.inbox.expect(redisOwner, () => {
      this.handOvers += 1;
      this.wake?.();
    });
    try {
      // Confirmed before we join the line, so that a hand-over is not missed; but no longer than a node may
      // take to answer: with the first master down its line is not kept, and the re-checks cover a hand-over
      // missed while the subscription is being made.
      if (deps.firstMasterReady()) await deps.atMostNodeTimeout(expecting.ready);
      while (!budgetAborted(budget)) {
        const seen: Seen = { releases: this.releases, handOvers: this.handOvers };
        if (this.handed) return this.handed;
        const grant = await this.round(redisOwner);
        if (grant) return grant;
        // Handed over while the round's promise settled: `pause` would not hear it (its wake is not set yet).
        // From here to the pause's wake, nothing yields.
        if (this.handed) return this.handed;
        if (!(await this.pause(seen))) break;
      }
      stopAwaitingHandover();
      const late = await this.keepLateHandover();
      if (late) return late;
      if (this.unavailable && !budgetAborted(budget)) throw this.unavailable;
      return null;
    } finally {
      expecting.stop();
      stopAwaitingHandover();
      stopWatchingReleases();
      // Not granted by our own rounds: give up our place in the first master's line (a vote it handed us
      // meanwhile goes on to the next) and whatever votes we kept while next in line.
      if (this.inLine) await deps.leaveLine(request.key, redisOwner, request.ttlMs);
      turn();
    }
  }

  /** One round on the masters, unless a contender of this process holds the key; the lock if we got it. */
  private async round(redisOwner: string): Promise<LeaseGrant | undefined> {
    const { deps, request, budget } = this;
    // Held by another contender here: the masters would say no; its release hands over or wakes us.
    if (deps.localHandOver.heldHere(request.key)) {
      budget.serverAnswered?.();
      this.waitingFor = 'release';
      return undefined;
    }
    try {
      this.inLine = true;
      // Told that the first master's vote is ours, or already holding it: ask every master at once.
      const round = await deps.attempt(request, redisOwner, this.handOvers === this.handOversBeforeRound && !this.nextInLine);
      budget.serverAnswered?.();
      if (round.grant) {
        this.inLine = false;
        return round.grant;
      }
      if (this.handed) return this.handed;
      this.waitingFor = round.outcome === 'queued' ? 'hand-over' : 'release';
      this.split = round.outcome === 'split';
      if (round.outcome === 'split' || round.outcome === 'refused') deps.processLine.listenForReleases(request.key);
      this.nextRounds = round.outcome === 'first' ? this.nextRounds + 1 : 0;
      this.nextInLine = round.outcome === 'first';
      this.handOversBeforeRound = this.handOvers;
      this.unavailable = undefined;
    } catch (error) {
      if (!(error instanceof LockBackendUnavailableError)) throw error;
      this.unavailable = error;
      this.waitingFor = 'release';
      deps.processLine.listenForReleases(request.key);
    }
    return undefined;
  }

  /**
   * Waits for news (unless it came during the round), at most the recheck interval; after a split vote a
   * short random pause too, growing while the splits go on, breaks the tie. False when the budget is spent.
   */
  private async pause(seen: Seen): Promise<boolean> {
    const remaining = this.deadline - Date.now();
    if (remaining <= 0) return false;
    const news = this.waitingFor === 'hand-over' ? this.handOvers !== seen.handOvers : this.releases !== seen.releases;
    if (!news) {
      const pause = this.unavailable ? this.deps.recheckMs / 5 : this.nextRounds > 0 ? Math.min(this.deps.recheckMs, 2 ** this.nextRounds) : this.deps.recheckMs;
      await waitForWake(this.budget, Date.now() + Math.min(remaining, pause), (woken) => {
        this.wake = woken;
        return () => (this.wake = undefined);
      });
    }
    if (this.split) {
      this.splitRounds += 1;
      await abortableDelay(Math.random() * Math.min(2 * this.splitRounds, 50), this.budget.signal);
    } else {
      this.splitRounds = 0;
    }
    return true;
  }

  /**
   * A hand-over that came as we gave up (no other can come once we stopped awaiting it) is kept, unless the
   * caller aborted: then it is passed on or released.
   */
  private async keepLateHandover(): Promise<LeaseGrant | null> {
    if (!this.handed) return null;
    if (!budgetAborted(this.budget)) return this.handed;
    await this.deps.release(this.handed);
    return null;
  }
}
