import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { abortableDelay } from '../../locking/abortable-delay';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { LockInspection } from '../../locking/lock-query';
import type { LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { CLOCK_DRIFT_FACTOR } from '../../locking/lease-expiry';
import { closeRedisClient } from './close-redis-client';
import { RedisChannelListener } from './redis-channel-listener';
import type { RedisLockClient } from './redis-client.type';
import { resolveRedisClient, type OwnedRedisClient } from './redis-connection';
import { RedisLockKeyNames, type RedisLockKeys } from './redis-keys';
import { REDLOCK_ACQUIRE_SCRIPT, REDLOCK_EXTEND_SCRIPT, REDLOCK_HAND_OVER_SCRIPT, REDLOCK_RELEASE_SCRIPT } from './redlock.scripts';
import { RedisScript } from './redis-script';
import { RedisGiveBacks } from './redis-give-back';
import { RedlockLocalHandOver } from './redlock-local-hand-over';
import { RedlockProcessLine } from './redlock-process-line';
import { majorityError } from './redlock-majority-error';
import { RedlockQuery } from './redlock-query';
import { RedlockQueueMaster } from './redlock-queue-master';
import { runOnMasters, type NodeOutcome } from './redlock-round';
import { RedlockWait, type RedlockAttempt, type RedlockWaitDeps } from './redlock-wait';
import { assertNodeTimeoutFits, validRedlockOptions, type RedlockStrategyOptions } from './redlock-options';

/**
 * Redlock (Redis' algorithm for N independent masters): the lock is held when a majority (⌊N/2⌋+1) of
 * the masters granted it within a validity of lease − elapsed − clock drift. Survives the loss of a
 * minority of masters, unlike one Redis with a replica.
 *
 * Under contention it does not poll blindly: within a process, contenders for a key queue locally so
 * only the first one asks the masters (no split votes between our own callers), and waiters are woken by
 * the release notification of any master. No fencing tokens: Redlock cannot produce a counter that all
 * masters agree on. Where correctness depends on the lock, use ZooKeeper or etcd and their tokens.
 *
 * `LockService.query` names the holder a majority of the masters names, with the end of its lease by the
 * masters' clocks (no grant time: the plain masters store none), and the waiters of the first master's line
 * (unknown while that master does not answer); `breakLock` deletes the holder's keys, owner-checked.
 */
export class RedlockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities = Object.freeze({ fencing: false, fifo: false, sharedLocks: false, crossProcess: true });
  readonly signalsServerAnswer = true;
  private readonly nodes: readonly OwnedRedisClient[];
  private readonly listeners: readonly RedisChannelListener[];
  private readonly keyNames: RedisLockKeyNames;
  private readonly quorum: number;
  private readonly nodeTimeoutMs: number;
  /** How long a release waits for the masters' answers before it says whether the lock was held (see `verdict`). */
  private readonly verdictTimeoutMs: number;
  private readonly recheckMs: number;
  /** This process's contenders per key, in arrival order: only the head asks the masters. */
  private readonly processLine: RedlockProcessLine;
  /** Which local contender holds each key taken on the masters, and the hand-over to the next. */
  private readonly localHandOver: RedlockLocalHandOver;
  /** The first master, which keeps the line of contenders across processes (see RedlockQueueMaster). */
  private readonly queueMaster: RedlockQueueMaster;
  /** What a waiting contender uses of this strategy (see RedlockWait). */
  private readonly waitDeps: RedlockWaitDeps;
  /** `inspect` and `breakLock` (see RedlockQuery). */
  private readonly query: RedlockQuery;
  /** Releases and departures a master did not answer, sent again until it does (see RedisGiveBacks). */
  private readonly giveBacks = new RedisGiveBacks();
  private readonly scripts = {
    acquire: new RedisScript(REDLOCK_ACQUIRE_SCRIPT),
    release: new RedisScript(REDLOCK_RELEASE_SCRIPT),
    extend: new RedisScript(REDLOCK_EXTEND_SCRIPT),
    handOver: new RedisScript(REDLOCK_HAND_OVER_SCRIPT),
  };

  constructor(options: RedlockStrategyOptions) {
    const valid = validRedlockOptions(options);
    this.name = valid.name;
    this.nodes = valid.masters.map((master, i) =>
      master.client ? resolveRedisClient(master.client, undefined, this.name, `clients[${i}]`) : resolveRedisClient(undefined, master.connection, this.name, `connections[${i}]`),
    );
    this.listeners = this.nodes.map((node) => new RedisChannelListener(this.name, () => node.client.duplicate()));
    this.keyNames = new RedisLockKeyNames(valid.namespace);
    this.quorum = Math.floor(this.nodes.length / 2) + 1;
    this.nodeTimeoutMs = valid.nodeTimeoutMs;
    this.verdictTimeoutMs = Math.max(this.nodeTimeoutMs, VERDICT_TIMEOUT_MS);
    this.recheckMs = valid.recheckMs;
    this.localHandOver = new RedlockLocalHandOver(valid.handOver);
    this.queueMaster = new RedlockQueueMaster(this.listeners[0], this.keyNames.namespace, this.recheckMs * 3);
    this.processLine = new RedlockProcessLine(this.listeners, this.keyNames);
    this.waitDeps = {
      processLine: this.processLine,
      localHandOver: this.localHandOver,
      queueMaster: this.queueMaster,
      recheckMs: this.recheckMs,
      firstMasterReady: () => this.nodes[FIRST].client.status === 'ready',
      atMostNodeTimeout: (work) => this.atMostNodeTimeout(work),
      attempt: (request, redisOwner, firstMasterFirst) => this.attempt(request, redisOwner, true, firstMasterFirst),
      leaveLine: (key, redisOwner, ttlMs) => this.leaveLine(key, redisOwner, ttlMs),
      release: (lease) => this.release(lease),
    };
    this.query = new RedlockQuery({
      name: this.name,
      nodes: this.nodes,
      nodeTimeoutMs: this.nodeTimeoutMs,
      quorum: this.quorum,
      keyNames: this.keyNames,
      queueMaster: this.queueMaster,
      releasePlain: (client, keys, owner) => this.scripts.release.run(client, [keys.keys[0]], [owner, keys.channel]).then((reply) => reply >= 1),
    });
  }

  /**
   * One try, as every instance's scheduler makes at the same cron tick. A tie is not a holder: when
   * contenders that came at the same instant split the votes, the one the first master chose keeps its
   * votes and asks again for the others (the rest, refused by the first master, give theirs back at once);
   * with the first master silent, each retries after a short random pause. Only then is the key "held".
   */
  async tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    const redisOwner = this.localHandOver.newRedisOwner(request.owner);
    let round = await this.attempt(request, redisOwner, false, false, true);
    if (round.outcome !== 'first' && round.outcome !== 'split') return round.grant;
    // Asked again as a waiter: the first master keeps our vote as it is, and puts us in its line if it refuses.
    let grant: LeaseGrant | null = null;
    try {
      for (let again = 1; again <= TIE_ROUNDS && (round.outcome === 'first' || round.outcome === 'split'); again += 1) {
        await abortableDelay(round.outcome === 'first' ? 2 ** again : Math.random() * 4 * again);
        round = await this.attempt(request, redisOwner, true);
      }
      grant = round.grant;
      return grant;
    } finally {
      // Gives back the votes kept, and leaves the first master's line in case a round was refused there.
      if (!grant) await this.leaveLine(request.key, redisOwner, request.ttlMs);
    }
  }

  /**
   * One round on every master under `redisOwner`. `inLine`: a contender refused by the first master joins
   * its queue (see RedlockQueueMaster). The outcome when not granted: `queued` (the first master said no:
   * wait for its hand-over), `first` (the first master's vote is ours, a majority is not yet: the last
   * holder's keys are on their way out), `split` (the first master did not answer, and other contenders
   * split the votes) or `refused`.
   */
  private async attempt(request: LockRequest, redisOwner = this.localHandOver.newRedisOwner(request.owner), inLine = false, firstMasterFirst = false, keepFirstVote = inLine): Promise<RedlockAttempt> {
    assertNodeTimeoutFits(this.nodeTimeoutMs, request.ttlMs);
    const keys = this.keyNames.of(request.key);
    if (firstMasterFirst) {
      // Not next in line yet: ask the first master alone, so that a contender it puts in line takes no
      // vote on the others that the one ahead of it then has to wait for.
      const [first] = await runOnMasters([this.nodes[FIRST]], this.nodeTimeoutMs, (client) => this.queueMaster.acquire(client, keys, redisOwner, request.ttlMs, true));
      if (first.answered && !first.held) return { grant: null, outcome: 'queued' };
    }
    const started = Date.now();
    const outcomes = await runOnMasters(
      this.nodes,
      this.nodeTimeoutMs,
      (client, i) =>
        i === FIRST
          ? this.queueMaster.acquire(client, keys, redisOwner, request.ttlMs, inLine)
          : this.scripts.acquire.run(client, [keys.keys[0]], [redisOwner, keys.channel, request.ttlMs]).then((reply) => reply === 1),
      this.quorum,
      false,
      FIRST,
    );
    const held = outcomes.filter((o) => o.held).length;
    const first = outcomes[FIRST];
    const validUntil = started + request.ttlMs - (Date.now() - started) - Math.ceil(request.ttlMs * CLOCK_DRIFT_FACTOR) - 2;
    // A majority, and not against the first master's line: a contender it refused waits for its turn.
    if (held >= this.quorum && (first.held || !first.answered) && validUntil > Date.now()) {
      // The first master's answer is late: it may yet put us in its line (the lock there another's). That
      // place would stay until it lapses, after our release too: its head would be handed the first
      // master's vote for nobody, and a query would list a holder as waiting. Left now, behind the
      // acquire on the same connection (a vote we got there stays ours).
      if (!first.answered && inLine) this.queueMaster.leavePlace(this.nodes[FIRST].client, keys, redisOwner).catch(() => undefined);
      this.localHandOver.begin(request, redisOwner, started, validUntil);
      return { grant: { key: request.key, owner: request.owner, mode: request.mode, expiresAt: validUntil }, outcome: 'granted' };
    }
    const answered = outcomes.filter((o) => o.answered).length;
    // The first master's vote (next in line, or first of a tie): keep every vote, the others come as the
    // last holder's keys or the refused contenders' votes go.
    if (first.held && keepFirstVote && answered >= this.quorum) return { grant: null, outcome: 'first' };
    // A failed round: free whatever we got at once, so that the others need not wait for our leases. That
    // includes every master that did not say no in time: its yes may be late (a slow master, or this
    // process's event loop stalled past the node timeout), and a late yes sets the key for a whole lease.
    // Each connection runs commands in order, so the release lands after the acquire it follows.
    const maybeSet = outcomes.map((o) => o.held || !o.answered);
    if (maybeSet.some(Boolean)) await this.releaseEverywhere(keys, redisOwner, { only: maybeSet, giveBackMs: request.ttlMs });
    if (answered < this.quorum) {
      throw majorityError({ strategy: this.name, namespace: this.keyNames.namespace, operation: 'acquire', key: request.key }, outcomes, this.quorum, Date.now() - started);
    }
    if (first.answered && !first.held) return { grant: null, outcome: inLine ? 'queued' : 'refused' };
    return { grant: null, outcome: held > 0 ? 'split' : 'refused' };
  }

  async acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    const deadline = Date.now() + budget.timeoutMs;
    // Fast path: nobody in this process holds or waits for the key, so just try (no queue, no
    // subscription). Once this strategy has waited in the first master's line, its first round below
    // both takes a free lock and joins the line, and this try would only add a round.
    if (!this.queueMaster.inbox.isOpen && !this.processLine.has(request.key) && !this.localHandOver.heldHere(request.key)) {
      try {
        const first = await this.attempt(request);
        budget.serverAnswered?.();
        if (first.grant) return first.grant;
      } catch (error) {
        if (!(error instanceof LockBackendUnavailableError)) throw error;
      }
    }
    return new RedlockWait(this.waitDeps, request, budget, deadline).run();
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const redisOwner = this.localHandOver.redisOwnerOf(lease);
    if (!redisOwner) return null; // released, or taken over here after its lease was lost
    const keys = this.keyNames.of(lease.key);
    const started = Date.now();
    const outcomes = await this.onEveryNode((client, i) => this.extendOn(client, i, keys, redisOwner, ttlMs));
    const extended = outcomes.filter((o) => o.held).length;
    const validUntil = started + ttlMs - (Date.now() - started) - Math.ceil(ttlMs * CLOCK_DRIFT_FACTOR) - 2;
    if (extended >= this.quorum) {
      // A majority extended it. A round slow enough to use up the validity (a slow minority master, a short
      // ttl) still says so, with a lease end already past: the caller treats it as expired, not as taken.
      if (validUntil > Date.now()) this.localHandOver.extended(lease, validUntil);
      else this.localHandOver.lost(lease);
      return { ...lease, expiresAt: validUntil };
    }
    this.localHandOver.lost(lease);
    if (outcomes.filter((o) => o.answered).length < this.quorum) {
      throw new LockBackendUnavailableError(this.name, 'extend on a majority', Date.now() - started, { key: lease.key });
    }
    return null;
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    const redisOwner = this.localHandOver.redisOwnerOf(lease);
    if (!redisOwner) return false;
    const keys = this.keyNames.of(lease.key);
    const next = this.localHandOver.successorOf(lease);
    if (next) {
      // A local hand-over saves a release and an acquisition on the masters, but the lock may have gone
      // behind our back (deleted, a master restarted empty): one round, which extends it for the successor's
      // lease under the successor's acquisition id, confirms it on a majority first, else nothing is handed
      // on and the release reports the loss.
      const successorId = this.localHandOver.newRedisOwner(next.request.owner);
      const started = Date.now();
      // Ends at a majority's yes: a master that is slow or gone costs nothing then (its part still runs).
      const outcomes = await runOnMasters(this.nodes, this.verdictTimeoutMs, (client, i) => this.handOverOn(client, i, keys, redisOwner, successorId, next.request.ttlMs), this.quorum);
      const validUntil = started + next.request.ttlMs - (Date.now() - started) - Math.ceil(next.request.ttlMs * CLOCK_DRIFT_FACTOR) - 2;
      const confirmed = outcomes.filter((o) => o.held).length >= this.quorum;
      if (confirmed && validUntil > Date.now() && this.localHandOver.handOver(lease, next, validUntil, successorId)) return true;
      this.localHandOver.forget(lease);
      // Either id may be on a master now: the successor's where the round renamed it (or may have: no answer in time).
      const renamed = outcomes.map((o) => o.held || !o.answered);
      await Promise.all([
        this.releaseEverywhere(keys, redisOwner, { giveBackMs: lease.expiresAt - Date.now() }),
        this.releaseEverywhere(keys, successorId, { only: renamed, giveBackMs: next.request.ttlMs }),
      ]);
      // Not handed on (the masters did not confirm it, or the successor left): held or lost, as they said.
      return confirmed || this.verdict(outcomes, 'release', lease.key, started);
    }
    // Our own subscriber is counted only where the server confirmed it; one still being made may or may
    // not be among those who heard, so it counts as someone else (the cautious side: no early start).
    const subscribedHere = this.listeners.map((listener) => listener.isConfirmed(keys.channel));
    const heard: number[] = [];
    const started = Date.now();
    const outcomes = await this.releaseEverywhere(keys, redisOwner, { heard, giveBackMs: lease.expiresAt - started, waitMs: this.verdictTimeoutMs, enough: this.quorum });
    // A contender of this process asking the masters next may start at once, unless other processes
    // listen for this key too: then it waits for the masters' notification like them, so that a process
    // whose hand-over limit ran out does not win the key straight back.
    const othersWaiting = heard.some((count, i) => count > (subscribedHere[i] ? 1 : 0));
    if (!othersWaiting) this.processLine.tellRelease(lease.key);
    return this.verdict(outcomes, 'release', lease.key, started);
  }

  /**
   * Whether a release's round says the lock was held until then: yes when a majority of the masters still
   * had it; no when so many said they had not that no majority can have (another holder may have one);
   * otherwise it cannot tell (masters down or silent past `verdictTimeoutMs`), which throws
   * `LockBackendUnavailableError` rather than guess either way.
   */
  private verdict(outcomes: readonly NodeOutcome[], operation: string, key: string, started: number): boolean {
    const held = outcomes.filter((o) => o.held).length;
    const silent = outcomes.filter((o) => !o.answered).length;
    if (held >= this.quorum) return true;
    if (held + silent < this.quorum) return false;
    const site = { strategy: this.name, namespace: this.keyNames.namespace, operation: `${operation} (${held} still had the lock, ${silent} did not answer: whether it was held to the end is unknown)`, key };
    throw majorityError(site, outcomes, this.quorum, Date.now() - started);
  }

  /** Who holds `key` by a majority of the masters, and the first master's line (see RedlockQuery). */
  inspect(key: string): Promise<LockInspection> {
    return this.query.inspect(key);
  }

  /** Ends the hold a majority of the masters names, owner-checked on each (see RedlockQuery). */
  breakLock(key: string): Promise<LockInspection['holders']> {
    return this.query.breakLock(key);
  }

  async ping(): Promise<void> {
    const outcomes = await this.onEveryNode(async (client) => (await client.ping()) === 'PONG');
    const up = outcomes.filter((o) => o.held).length;
    if (up < this.quorum) throw new LockBackendUnavailableError(this.name, `ping a majority (${up} of ${this.nodes.length} up)`, 0);
  }

  async close(): Promise<void> {
    this.giveBacks.close();
    await Promise.all(this.listeners.map((listener) => listener.close()));
    await Promise.all(this.nodes.filter((node) => node.owned).map((node) => closeRedisClient(node.client)));
  }

  /** Waits for `work` (whatever its outcome), but no longer than one node timeout. */
  private async atMostNodeTimeout(work: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, this.nodeTimeoutMs)))]);
    clearTimeout(timer);
  }

  /** Leaves the first master's line under `redisOwner` and drops its votes on the others, again where a master did not answer. */
  private async leaveLine(key: string, redisOwner: string, ttlMs: number): Promise<void> {
    const keys = this.keyNames.of(key);
    await this.giveBackOn({ ttlMs, waitMs: this.nodeTimeoutMs }, (client, i) =>
      i === FIRST
        ? this.queueMaster.leave(client, keys, redisOwner).then(() => true)
        : this.scripts.release.run(client, [keys.keys[0]], [redisOwner, keys.channel]).then((reply) => reply >= 1),
    );
  }

  /**
   * Deletes the key where it is `owner`'s (on the masters `only` marks, by default all), as a give-back (see
   * `giveBackOn`: again where a master's call failed, for up to `giveBackMs`, the key's lease), waiting
   * `waitMs` (default the node timeout) for the answers, or until `enough` masters said yes. `heard`, if
   * given, gets per master how many subscribers heard the release.
   */
  private releaseEverywhere(
    keys: RedisLockKeys,
    owner: string,
    options: { readonly heard?: number[]; readonly only?: readonly boolean[]; readonly giveBackMs: number; readonly waitMs?: number; readonly enough?: number },
  ): Promise<NodeOutcome[]> {
    const { heard, only, giveBackMs, waitMs = this.nodeTimeoutMs, enough } = options;
    return this.giveBackOn({ only, ttlMs: giveBackMs, waitMs, enough }, (client, i) => {
      // The first master hands the vote to the head of its line (and tells it) instead of announcing it.
      if (i === FIRST) return this.queueMaster.release(client, keys, owner);
      return this.scripts.release.run(client, [keys.keys[0]], [owner, keys.channel]).then((reply) => {
        if (heard) heard[i] = Math.max(0, Number(reply) - 1);
        return Number(reply) >= 1;
      });
    });
  }

  /**
   * Runs a give-back (`operation`: a release, leaving the line) on the masters `only` marks (by default all),
   * waiting `waitMs` for their answers (or until `enough` said yes), sent also where the connection is down
   * (ioredis queues it until it reconnects, after any acquire it sends again). Where a master's call fails
   * without an answer (the client failed it after its reconnections failed, or its connection closed under
   * it), it is sent to that master again in the background until it gets one, or `ttlMs` passes (the key
   * ends by then): otherwise the key would stay on that master for the whole lease (see RedisGiveBacks).
   * A call still on its way when the round ends is left to finish: only its failure sends it again.
   */
  private giveBackOn(
    where: { readonly only?: readonly boolean[]; readonly ttlMs: number; readonly waitMs: number; readonly enough?: number },
    operation: (client: RedisLockClient, index: number) => Promise<boolean>,
  ): Promise<NodeOutcome[]> {
    const { only, ttlMs, waitMs, enough = Infinity } = where;
    const run = (client: RedisLockClient, i: number): Promise<boolean> => (only && !only[i] ? Promise.resolve(false) : operation(client, i));
    // Sent again by the give-backs themselves (which try again while it fails), not through this round.
    const failed = (i: number, error: unknown): void => this.giveBacks.afterFailure(error, () => operation(this.nodes[i].client, i), ttlMs);
    return runOnMasters(this.nodes, waitMs, run, enough, true, undefined, failed);
  }

  /** Renames `owner`'s key on master `index` to `successor`'s, for `ttlMs` (a local hand-over). */
  private handOverOn(client: RedisLockClient, index: number, keys: RedisLockKeys, owner: string, successor: string, ttlMs: number): Promise<boolean> {
    if (index === FIRST) return this.queueMaster.handOver(client, keys, owner, successor, ttlMs);
    return this.scripts.handOver.run(client, [keys.keys[0]], [owner, successor, ttlMs]).then((reply) => reply === 1);
  }

  /** Extends `owner`'s key on master `index`. */
  private extendOn(client: RedisLockClient, index: number, keys: RedisLockKeys, owner: string, ttlMs: number): Promise<boolean> {
    if (index === FIRST) return this.queueMaster.extend(client, keys, owner, ttlMs);
    return this.scripts.extend.run(client, [keys.keys[0]], [owner, keys.channel, ttlMs]).then((reply) => reply === 1);
  }

  /** Runs `operation` on every master in parallel (see `runOnMasters`). */
  private onEveryNode(operation: (client: RedisLockClient, index: number) => Promise<boolean>, enough = Infinity): Promise<NodeOutcome[]> {
    return runOnMasters(this.nodes, this.nodeTimeoutMs, operation, enough);
  }
}

/** The master that keeps the line of contenders (see RedlockQueueMaster). */
const FIRST = 0;

/**
 * How long a release waits for the masters' answers before it tells whether the lock was held (at least the
 * node timeout): a master slow past the node timeout (a loaded machine, a master far away) still counts,
 * rather than turning a held lock into an unknown one.
 */
const VERDICT_TIMEOUT_MS = 1_000;

/**
 * Further rounds a single try makes after a tie, before it reports the key held. The pauses between them
 * (doubling, 2 ms first) cover the refused contenders' releases; a holder whose keys are still on their
 * way out after that is a real one.
 */
const TIE_ROUNDS = 5;

