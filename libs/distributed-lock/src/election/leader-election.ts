import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LeadershipLostError, type LeadershipLostReason } from '../errors/leadership-lost.error';
import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockLostError } from '../errors/lock-lost.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import { abortableDelay } from '../locking/abortable-delay';
import { assertDuration } from '../locking/lock-options';
import type { LockHandle } from '../locking/lock-handle';
import type { LockService } from '../locking/lock-service';
import { retryDelay } from '../locking/retry-policy';
import { LOCK_TELEMETRY } from '../telemetry/lock-telemetry-names';
import type { RootSpans } from '../telemetry/root-spans';
import { LeaderElectionEvents } from './leader-election-events';
import { leadershipOf, type LeadershipInfo } from './leadership-info';
import { LEADER_ELECTION_DEFAULTS, validateLeaderElectionOptions, type LeaderElectionOptions, type ResolvedLeaderElectionOptions } from './leader-election-options';

const { attributes } = LOCK_TELEMETRY;

/** One term of leadership held by this process. */
interface Term {
  readonly lock: LockHandle;
  readonly controller: AbortController;
  readonly since: number;
  readonly ended: (outcome: { reason: LeadershipLostReason; heldMs: number }) => void;
}

/**
 * Leader election over a lock service: at most one process of the cluster leads a named election at a
 * time. `start()` campaigns: the process waits for the election's lock in the strategy's own line (etcd:
 * keys on a lease, the lowest revision leads; ZooKeeper: ephemeral sequential nodes, each watching its
 * predecessor; Redis in fair mode: its queue; the others poll), then holds it with the watchdog. While
 * it leads, `isLeader` is true, `term` is the lock's fencing token (strictly increasing with every new
 * leader, on strategies with fencing), and `signal` aborts the moment leadership is known lost. After a
 * loss it campaigns again after a pause (`retry`). `resign()` gives the leadership up; `close()` too, for
 * good. No Nest here: in Nest, register it with `DistributedLockModule.forFeature({ elections })`.
 *
 * Between two leaders: the old one stops leading when its signal aborts, the new one starts after the
 * store let it in. A process frozen past its lease (a long GC pause, SIGSTOP) may act on its old
 * leadership for a moment after it wakes, before its timers run: `isLeader` (read again) is already
 * false then, since it checks the lease's end on the local clock and asks the lock whether it is known
 * lost (on ZooKeeper: a session the server may have expired meanwhile, whatever the `ttl`), but a signal
 * read before the freeze aborts only at the first timer tick. Guard leader-only writes with `term` as a
 * fencing token.
 */
export class LeaderElection {
  /** gained, lost, campaignError. */
  readonly events = new LeaderElectionEvents();
  private readonly options: ResolvedLeaderElectionOptions;
  private readonly key: string;
  private current: Term | undefined;
  private lastLoss: LeadershipLostError;
  private campaigning = false;
  private closed = false;
  /** How to end each `waitForLeadership` still waiting, when the election closes. */
  private readonly leadershipWaits = new Set<() => void>();
  /** Aborts the wait in line or the pause between campaigns, when campaigning stops. */
  private stop = new AbortController();
  private loop: Promise<void> | undefined;
  private failures = 0;
  /** With telemetry: each campaign, and the term it wins, is a trace of its own (a `lock.election` root span). */
  private spans: RootSpans | undefined;

  constructor(
    private readonly service: LockService,
    options: LeaderElectionOptions,
  ) {
    this.options = validateLeaderElectionOptions(options);
    this.key = LEADER_ELECTION_DEFAULTS.keyPrefix + this.options.name;
    this.lastLoss = new LeadershipLostError(this.options.name, undefined, 'not-leader');
  }

  /**
   * @internal Traces each campaign under a root span of its own (the Nest module calls it when `telemetry`
   * is on): the wait in line, and the term once won, with what the leadership hooks trace.
   */
  traceWith(spans: RootSpans | undefined): void {
    this.spans = spans;
  }

  /** The election's name. */
  get name(): string {
    return this.options.name;
  }

  /** The strategy the election runs on (its registered name). */
  get strategyName(): string {
    return this.service.strategyName;
  }

  /**
   * True while this process leads. Also false once the lease's end passed on the local clock without a
   * renewal, or the strategy knows the lock lost without asking its server (ZooKeeper: the session).
   */
  get isLeader(): boolean {
    return this.checkLease() !== undefined;
  }

  /** The current term (the lock's fencing token) while leading; undefined otherwise and on strategies without fencing. */
  get term(): number | undefined {
    return this.checkLease()?.lock.fencingToken;
  }

  /**
   * While leading: aborts with `LeadershipLostError` (its `cause` the `LockLostError`) the moment the
   * leadership is known lost, or when it is given up. Not leading: an aborted signal. Read it again for
   * each term: a new term has a new signal.
   */
  get signal(): AbortSignal {
    const term = this.checkLease();
    return term ? term.controller.signal : AbortSignal.abort(this.lastLoss);
  }

  /**
   * Who leads this election and who stands next, as the backend says now, from any process (campaigning or
   * not): the leader's owner (host, pid, `instanceName`), term, since when and until when, and the candidates
   * in the order the backend will choose them. It reads the election's lock (`LockService.query`), so it
   * answers on the strategies `query` does, and throws as it does.
   *
   * @example
   * const { leader, candidates } = await election.query();
   * console.log(leader ? `led by ${leader.owner.instance ?? leader.owner.host}, term ${leader.term}` : 'nobody leads', candidates);
   */
  async query(): Promise<LeadershipInfo> {
    return leadershipOf(this.name, await this.service.query(this.key));
  }

  /** True between `start()` and `resign()` / `close()`. */
  get isCampaigning(): boolean {
    return this.campaigning;
  }

  /** Campaigns (waits in line for the leadership, and again after each loss). Idempotent. */
  start(): void {
    if (this.closed) throw new InvalidLockOptionsError(`election "${this.name}"`, 'it was closed; create a new LeaderElection to campaign again.');
    if (this.campaigning) return;
    this.campaigning = true;
    // Each campaign has its own stop: a resignation still under way stops its own loop, never a new one.
    const stop = new AbortController();
    this.stop = stop;
    this.loop = this.campaign(stop.signal).catch((error: unknown) => {
      // Not expected (every step handles its own failures): reported rather than left unhandled.
      if (this.stop === stop) this.campaigning = false;
      this.events.emit('campaignError', { election: this.name, error, retryInMs: -1 });
    });
  }

  /**
   * Gives the leadership up (the term's signal aborts first, then the lock is released, so the next
   * leader starts after this one stopped). With `rejoin`, campaigns again after `retry.initialDelay`;
   * without, stops campaigning until `start()`. Resolves once the lock is released.
   */
  async resign(options: { readonly rejoin?: boolean } = {}): Promise<void> {
    if (options.rejoin !== undefined && typeof options.rejoin !== 'boolean') throw new InvalidLockOptionsError('rejoin', 'expected true or false.');
    await this.stepDown(options.rejoin ?? false, 'resigned');
  }

  /**
   * Resigns and stops for good (application shutdown): a `waitForLeadership` still waiting rejects. Resolves
   * once the campaign has ended.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.markClosed();
    await this.stepDown(false, 'closed');
  }

  /** Never campaigns again: `start()` refuses, and a `waitForLeadership` still waiting rejects. */
  private markClosed(): void {
    this.closed = true;
    for (const end of [...this.leadershipWaits]) end();
  }

  /**
   * Resolves once this process leads (at once if it does). Rejects with `LockAcquireTimeoutError` after
   * `timeout` ms, with `LockAcquireAbortedError` when `signal` aborts or the election is closed (its `cause`
   * then a `LeadershipLostError` with reason 'closed').
   */
  waitForLeadership(options: { readonly timeout?: number; readonly signal?: AbortSignal } = {}): Promise<void> {
    let timeout: number | undefined;
    try {
      timeout = options.timeout === undefined ? undefined : assertDuration(options.timeout, 'timeout', 0);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    if (this.isLeader) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const done = (error?: Error): void => {
        clearTimeout(timer);
        this.events.off('gained', onGained);
        options.signal?.removeEventListener('abort', onAbort);
        this.leadershipWaits.delete(onClosed);
        if (error) reject(error);
        else resolve();
      };
      const onGained = (): void => done();
      const onAbort = (): void => done(new LockAcquireAbortedError(this.key, this.strategyName, Date.now() - started, { cause: options.signal?.reason }));
      // A closed election never leads again: the wait ends now rather than at its timeout (whose timer kept the process alive).
      const onClosed = (): void =>
        done(new LockAcquireAbortedError(this.key, this.strategyName, Date.now() - started, { cause: new LeadershipLostError(this.name, undefined, 'closed') }));
      const timer = timeout === undefined ? undefined : setTimeout(() => done(new LockAcquireTimeoutError(this.key, this.strategyName, Date.now() - started)), timeout);
      this.events.on('gained', onGained);
      this.leadershipWaits.add(onClosed);
      if (this.closed) onClosed();
      else if (options.signal?.aborted) onAbort();
      else options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private async stepDown(rejoin: boolean, reason: LeadershipLostReason): Promise<void> {
    // The campaign being stopped, taken before any wait: start() may begin another one meanwhile.
    const loop = this.loop;
    if (!rejoin) {
      this.campaigning = false;
      this.stop.abort();
    }
    const term = this.endTerm(reason);
    if (term) await this.giveBack(term.lock);
    if (!rejoin) await loop;
  }

  /** Releases the lock of a term that ended; a failure is reported (the lease frees the lock by itself). */
  private async giveBack(lock: LockHandle): Promise<void> {
    try {
      await lock.release();
    } catch (error) {
      this.events.emit('campaignError', { election: this.name, error, retryInMs: 0 });
    }
  }

  /**
   * The running term, after ending it if its lease passed on the local clock (a process that was frozen),
   * or its lock is known lost (`isHeld` asks the strategy: on ZooKeeper, whether the session may have
   * expired while the process was frozen, however long the `ttl`).
   * A term ended so gives its lock back: the store may still hold it for us (a renewal sent before the
   * freeze can still get through, and the watchdog would go on renewing it), and a lock nobody leads with
   * would keep every candidate, this process's next campaign included, waiting behind it.
   */
  private checkLease(): Term | undefined {
    const term = this.current;
    if (!term) return undefined;
    if (term.lock.isHeld && term.lock.expiresAt > Date.now()) return term;
    this.endTerm('lock-lost', term.lock.signal.aborted ? term.lock.signal.reason : new LockLostError(term.lock.key, this.strategyName, 'expired'));
    if (term.lock.isHeld) void this.giveBack(term.lock);
    return undefined;
  }

  /** Ends the running term, if any: its signal aborts, then `lost` is emitted. Returns it. */
  private endTerm(reason: LeadershipLostReason, cause?: unknown): Term | undefined {
    const term = this.current;
    if (!term) return undefined;
    this.current = undefined;
    const heldMs = Math.round(performance.now() - term.since);
    const error = new LeadershipLostError(this.name, term.lock.fencingToken, reason, { cause });
    this.lastLoss = error;
    term.controller.abort(error);
    this.events.emit('lost', { election: this.name, term: term.lock.fencingToken, reason, error, heldMs });
    term.ended({ reason, heldMs });
    return term;
  }

  private async campaign(stopped: AbortSignal): Promise<void> {
    while (!stopped.aborted) {
      const span = this.spans?.start(LOCK_TELEMETRY.spans.election, { [attributes.election]: this.name, [attributes.strategy]: this.strategyName });
      const traced = <T>(fn: () => T): T => (span ? span.run(fn) : fn());
      let lock: LockHandle;
      try {
        lock = await traced(() =>
          this.service.acquire(this.key, {
            ttl: this.options.ttl,
            autoExtend: true,
            waitTimeout: LEADER_ELECTION_DEFAULTS.campaignRound,
            signal: stopped,
            reentrant: false,
          }),
        );
      } catch (error) {
        if (stopped.aborted) {
          span?.end({ [attributes.electionOutcome]: 'stopped' });
          return;
        }
        if (error instanceof LockAcquireTimeoutError) {
          span?.end({ [attributes.electionOutcome]: 'timeout' });
          continue; // a round in line ended: line up again
        }
        if (error instanceof LockServiceClosedError) {
          // Its lock service was closed under it (the application shut down without closing the election):
          // it can never lead again, and a campaign that went on retrying would keep the process alive.
          span?.end({ [attributes.electionOutcome]: 'stopped' });
          this.markClosed();
          if (this.stop.signal === stopped) this.campaigning = false;
          return;
        }
        span?.end({ [attributes.electionOutcome]: 'error' }, error);
        await this.pauseAfterFailure(error, stopped);
        continue;
      }
      if (stopped.aborted) {
        span?.end({ [attributes.electionOutcome]: 'stopped' });
        await lock.release().catch(() => false);
        return;
      }
      // The term in the campaign's trace: the hooks that `gained` runs (and what they start) are its children.
      const { reason, heldMs } = await traced(() => this.lead(lock));
      span?.end({ [attributes.electionOutcome]: 'led', [attributes.term]: lock.fencingToken, [attributes.termEndReason]: reason });
      if (heldMs > this.options.ttl) this.failures = 0;
      if (stopped.aborted) return;
      // Lost: come back after a growing pause. Resigned to rejoin: let the others have it first.
      const pause = reason === 'lock-lost' ? retryDelay(this.failures++, this.options.retry) : this.options.retry.initialDelay;
      await abortableDelay(pause, stopped);
    }
  }

  private async pauseAfterFailure(error: unknown, stopped: AbortSignal): Promise<void> {
    const retryInMs = retryDelay(this.failures++, this.options.retry);
    this.events.emit('campaignError', { election: this.name, error, retryInMs });
    await abortableDelay(retryInMs, stopped);
  }

  /** Leads until the term ends; resolves how it ended. */
  private lead(lock: LockHandle): Promise<{ reason: LeadershipLostReason; heldMs: number }> {
    return new Promise((resolve) => {
      const term: Term = { lock, controller: new AbortController(), since: performance.now(), ended: resolve };
      this.current = term;
      const onLost = (): void => {
        if (this.current === term) this.endTerm('lock-lost', lock.signal.reason);
      };
      try {
        this.events.emit('gained', { election: this.name, term: lock.fencingToken, signal: term.controller.signal });
      } catch (error) {
        // A listener's failure is not the election's: reported, and the term goes on.
        this.events.emit('campaignError', { election: this.name, error, retryInMs: 0 });
      }
      if (lock.signal.aborted) onLost();
      else lock.signal.addEventListener('abort', onLost, { once: true });
    });
  }
}
