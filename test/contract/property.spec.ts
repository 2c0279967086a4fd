import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import {
  InvalidLockOptionsError,
  LockAcquireAbortedError,
  LockAcquireTimeoutError,
  LockBackendUnavailableError,
  LockLostError,
  LockManager,
  LockNotHeldError,
  LockService,
  type Lock,
  type LockHandle,
  type LockStrategy,
} from '@app/distributed-lock';
import { MAX_DURATION_MS, MIN_TTL_MS } from '@app/distributed-lock/locking/lock-options';
import type { ContractSubject } from './contract-subject';
import { subjects } from './subjects';

/*
 * The model-based property test of the lock service (see lock-service.property.spec.ts for the full model
 * on the in-memory strategy with fake time), bounded, against every real backend: random sequences of
 * tryAcquire, release, extend (valid and invalid ttls), waits that time out or are aborted, withLock
 * sections (returning, throwing, or with their key removed behind their back), removals of a held lock,
 * and a client closed then replaced by a fresh one. Two clients per subject, each with its own connections.
 * Leases are long, so nothing expires in the model: every outcome is decided by the commands alone.
 */

/**
 * Runs per subject: 25 in `npm test`. A long run outside it sets `PROPERTY_RUNS` (e.g. 2000: then no time
 * budget stops it early), and may replay a failure with the `PROPERTY_SEED` and `PROPERTY_PATH` fast-check
 * printed, or weight the commands towards the aborts and closes with `PROPERTY_COMMANDS=abort-close` (see
 * scripts/property-long-run.sh).
 */
const LONG_RUN = positiveIntegerFromEnv('PROPERTY_RUNS');
const RUNS_PER_SUBJECT = LONG_RUN ?? 25;
const MAX_COMMANDS = 12;
/** fast-check stops starting new runs (or shrinking) after this; a subject's test stays bounded. */
const TIME_BUDGET_MS = LONG_RUN === undefined ? 20_000 : undefined;
/** A whole subject's test: 60 s in `npm test`; a long run takes what its runs take (a run is well under 5 s). */
const SUBJECT_TIMEOUT_MS = LONG_RUN === undefined ? 60_000 : LONG_RUN * 5_000;
const REPLAY = { seed: integerFromEnv('PROPERTY_SEED'), path: process.env.PROPERTY_PATH || undefined };

function integerFromEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new Error(`${name} must be a whole number, got "${raw}"`);
  return value;
}

function positiveIntegerFromEnv(name: string): number | undefined {
  const value = integerFromEnv(name);
  if (value !== undefined && value < 1) throw new Error(`${name} must be at least 1, got ${value}`);
  return value;
}
const LEASE_MS = 60_000;
const KEYS = ['a', 'b'] as const;
type Key = (typeof KEYS)[number];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------- model

/** held; released (by its caller or by close()); removed behind its back (not yet noticed, maybe); lost (noticed). */
type HandleState = 'held' | 'released' | 'removed' | 'lost';

interface ModelHandle {
  readonly client: number;
  readonly key: Key;
  state: HandleState;
  /** The caller called release() on it (then extend() says "not held" before it looks at the ttl). */
  releasedByCaller: boolean;
}

interface Model {
  /** The subject's name (commands that meet a known bug of the subject are left out). */
  readonly subject: string;
  readonly handles: ModelHandle[];
  /** Highest fencing token seen per key. */
  readonly lastToken: Map<Key, number>;
  /** Keys whose lock was deleted behind its holder's back since their last grant. */
  readonly removedSinceGrant: Set<Key>;
  /** When a wait on the key last timed out (its strategy may still be leaving the queue). */
  readonly timedOutAt: Map<Key, number>;
}

interface Client {
  readonly strategy: LockStrategy;
  readonly manager: LockManager;
  readonly locks: LockService;
}

interface Real {
  readonly subject: ContractSubject;
  /** The subject's two clients; Close replaces one by a fresh one, kept for the following runs. */
  readonly clients: Client[];
  readonly handles: LockHandle[];
  /** Every manager the subject's test created, closed at its end. */
  readonly managers: LockManager[];
  /** Unique to the run: a run never meets another run's locks. */
  readonly prefix: string;
  readonly tally: Map<string, number>;
}

const fullKey = (r: Real, key: Key): string => `${r.prefix}${key}`;

function holderOf(m: Readonly<Model>, key: Key): ModelHandle | undefined {
  return m.handles.find((handle) => handle.key === key && handle.state === 'held');
}

function isValidTtl(ttl: number): boolean {
  return Number.isFinite(ttl) && Math.ceil(ttl) >= MIN_TTL_MS && Math.ceil(ttl) <= MAX_DURATION_MS;
}

/**
 * Subjects on which a key whose lock was deleted behind its holder's back may hand out a token again (the
 * key's next token after a removal is then not compared with the earlier ones). None now: SQLite did, until
 * its tokens were tied to a last-token row (see the test at the end of the file).
 */
const TOKENS_MAY_REPEAT_AFTER_REMOVAL: ReadonlySet<string> = new Set<string>();

/**
 * Subjects on which a wait aborted behind a holder can go on on the server after acquire() rejected, and take
 * the lock when the holder releases (their aborts while waiting are then left out of the sequences). None now:
 * the pessimistic strategy did, until it stopped sending statements once given up (see the end of the file).
 */
const ABORTED_WAIT_MAY_LINGER: ReadonlySet<string> = new Set<string>();

/** A grant's fencing token: above every earlier one of the key where the strategy has fencing, none otherwise. */
function expectFreshToken(m: Model, r: Real, key: Key, token: number | undefined): void {
  if (!r.subject.capabilities.fencing) {
    expect(token).toBeUndefined();
    return;
  }
  expect(token).toEqual(expect.any(Number));
  const knownBug = m.removedSinceGrant.has(key) && TOKENS_MAY_REPEAT_AFTER_REMOVAL.has(r.subject.name);
  if (!knownBug) expect(token).toBeGreaterThan(m.lastToken.get(key) ?? 0);
  m.removedSinceGrant.delete(key);
  m.lastToken.set(key, token as number);
}

type Outcome<T> = { value: T } | { error: unknown };

async function outcomeOf<T>(promise: Promise<T>): Promise<Outcome<T>> {
  try {
    return { value: await promise };
  } catch (error) {
    return { error };
  }
}

/** Expects a rejection with an error of `type`; returns `label` (the case, for the tally). */
function expectError(outcome: Outcome<unknown>, type: abstract new (...args: never[]) => Error, label = ''): string {
  if ('value' in outcome) throw new Error(`expected ${type.name}, got the value ${String(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(type);
  return label;
}

function valueOf<T>(outcome: Outcome<T>): T {
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

/**
 * How long after a timed-out wait a release may still go to that waiter. The caller hears of the timeout at
 * its waitTimeout, while the strategy leaves its queue in the background (one round trip, later under
 * load). A release in between hands the lock to the leaving waiter, which gives it straight back: the
 * lock is not free for that moment, and nobody runs a section under it (see the README's guarantees).
 */
const LEAVING_GRACE_MS = 1_000;

/**
 * The model says `key` is free: a client gets it at once, and gives it back. Right after a timed-out wait
 * on the key, "at once" allows for that waiter to finish leaving (LEAVING_GRACE_MS).
 */
async function expectFree(m: Model, r: Real, key: Key, by: number): Promise<void> {
  const leavingUntil = (m.timedOutAt.get(key) ?? Number.NEGATIVE_INFINITY) + LEAVING_GRACE_MS;
  let probe = await r.clients[by].locks.tryAcquire(fullKey(r, key), { ttl: LEASE_MS, autoExtend: false });
  while (probe === null && Date.now() < leavingUntil) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    probe = await r.clients[by].locks.tryAcquire(fullKey(r, key), { ttl: LEASE_MS, autoExtend: false });
  }
  expect({ key, free: probe !== null }).toEqual({ key, free: true });
  expectFreshToken(m, r, key, probe?.fencingToken);
  expect(await probe?.release()).toBe(true);
}

/**
 * After every command: the handles agree with the model, and no key has two handles that say they hold it
 * (leaving out a removed lock's handle, which may not know yet).
 */
function expectAgreement(m: Model, r: Real): void {
  const heldPerKey = new Map<string, number>();
  m.handles.forEach((expected, index) => {
    const handle = r.handles[index];
    const at = `handle #${index} (client ${expected.client}, key "${expected.key}", ${expected.state})`;
    switch (expected.state) {
      case 'held':
      case 'released':
        expect({ at, isHeld: handle.isHeld, aborted: handle.signal.aborted }).toEqual({ at, isHeld: expected.state === 'held', aborted: false });
        break;
      case 'removed':
        // Strategies that push removals abort the signal on their own, soon; the others at the next extend or release.
        if (handle.signal.aborted) expect(handle.signal.reason).toBeInstanceOf(LockLostError);
        break;
      case 'lost':
        expect({ at, isHeld: handle.isHeld, aborted: handle.signal.aborted }).toEqual({ at, isHeld: false, aborted: true });
        expect(handle.signal.reason).toBeInstanceOf(LockLostError);
        break;
    }
    if (handle.isHeld && expected.state !== 'removed') heldPerKey.set(handle.key, (heldPerKey.get(handle.key) ?? 0) + 1);
  });
  for (const [key, count] of heldPerKey) expect({ key, held: count }).toEqual({ key, held: 1 });
}

// ---------------------------------------------------------------------------------------------- commands

abstract class LockCommand implements fc.AsyncCommand<Model, Real> {
  abstract check(m: Readonly<Model>): boolean;
  /** Runs the command on both sides; resolves which case of the model it was (for the tally). */
  protected abstract act(m: Model, r: Real): Promise<string>;
  abstract toString(): string;

  async run(m: Model, r: Real): Promise<void> {
    const label = `${this.constructor.name}: ${await this.act(m, r)}`;
    r.tally.set(label, (r.tally.get(label) ?? 0) + 1);
    expectAgreement(m, r);
  }
}

/** tryAcquire: an invalid ttl is refused first; then granted iff the key is free. */
class TryAcquire extends LockCommand {
  constructor(
    private readonly client: number,
    private readonly key: Key,
    private readonly ttl: number,
  ) {
    super();
  }

  check(): boolean {
    return true;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const outcome = await outcomeOf(r.clients[this.client].locks.tryAcquire(fullKey(r, this.key), { ttl: this.ttl, autoExtend: false }));
    if (!isValidTtl(this.ttl)) return expectError(outcome, InvalidLockOptionsError, 'invalid ttl');
    const handle = valueOf(outcome);
    if (holderOf(m, this.key)) {
      expect(handle).toBeNull();
      return 'key held';
    }
    expect(handle).not.toBeNull();
    expectFreshToken(m, r, this.key, handle?.fencingToken);
    m.handles.push({ client: this.client, key: this.key, state: 'held', releasedByCaller: false });
    r.handles.push(handle as LockHandle);
    return 'granted';
  }

  toString(): string {
    return `TryAcquire(client ${this.client}, "${this.key}", ttl ${this.ttl})`;
  }
}

/** A wait behind a holder that times out (LockAcquireTimeoutError) and leaves the key as it was. */
class TimedOutAcquire extends LockCommand {
  constructor(
    private readonly client: number,
    private readonly key: Key,
    private readonly wait: number,
  ) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    return holderOf(m, this.key) !== undefined;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const outcome = await outcomeOf(r.clients[this.client].locks.acquire(fullKey(r, this.key), { ttl: LEASE_MS, autoExtend: false, waitTimeout: this.wait }));
    m.timedOutAt.set(this.key, Date.now());
    return expectError(outcome, LockAcquireTimeoutError, 'timed out');
  }

  toString(): string {
    return `TimedOutAcquire(client ${this.client}, "${this.key}", waitTimeout ${this.wait})`;
  }
}

/** An acquisition cancelled through its AbortSignal: before the call (free key or not), or while it waits. */
class AbortedAcquire extends LockCommand {
  constructor(
    private readonly client: number,
    private readonly key: Key,
    /** undefined: aborted before the call; else after this many ms of waiting behind a holder. */
    private readonly abortAfter: number | undefined,
  ) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    if (this.abortAfter === undefined) return true;
    return !ABORTED_WAIT_MAY_LINGER.has(m.subject) && holderOf(m, this.key) !== undefined;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const controller = new AbortController();
    if (this.abortAfter === undefined) controller.abort(new Error('cancelled by the caller'));
    let settled = false;
    const acquiring = r.clients[this.client].locks
      .acquire(fullKey(r, this.key), { ttl: LEASE_MS, autoExtend: false, waitTimeout: 10_000, signal: controller.signal })
      .finally(() => (settled = true));
    if (this.abortAfter === undefined) return expectError(await outcomeOf(acquiring), LockAcquireAbortedError, 'aborted before the call');
    const outcome = outcomeOf(acquiring);
    await sleep(this.abortAfter);
    // Behind a holder with a long lease, the wait cannot have ended by itself.
    expect(settled).toBe(false);
    controller.abort(new Error('cancelled by the caller'));
    return expectError(await outcome, LockAcquireAbortedError, 'aborted while waiting');
  }

  toString(): string {
    return this.abortAfter === undefined
      ? `AbortedAcquire(client ${this.client}, "${this.key}", aborted before the call)`
      : `AbortedAcquire(client ${this.client}, "${this.key}", aborted after ${this.abortAfter} ms of waiting)`;
  }
}

/** release(): true iff still held (then the key is free at once); false for a released or removed lock. */
class Release extends LockCommand {
  constructor(private readonly pick: number) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    return m.handles.length > 0;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const index = this.pick % m.handles.length;
    const expected = m.handles[index];
    const before = expected.state;
    const released = await r.handles[index].release();
    expect({ index, released }).toEqual({ index, released: before === 'held' });
    expected.releasedByCaller = true;
    // A removed lock's release finds it gone: the loss is reported, at the latest now.
    if (before === 'removed') expected.state = 'lost';
    if (before !== 'held') return before;
    expected.state = 'released';
    await expectFree(m, r, expected.key, 1 - expected.client);
    return 'held';
  }

  toString(): string {
    return `Release(handle ${this.pick} mod count)`;
  }
}

/** extend(ttl): invalid ttls are refused and change nothing; a valid one succeeds iff still held. */
class Extend extends LockCommand {
  constructor(
    private readonly pick: number,
    private readonly ttl: number,
  ) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    return m.handles.length > 0;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const index = this.pick % m.handles.length;
    const expected = m.handles[index];
    const outcome = await outcomeOf(r.handles[index].extend(this.ttl));
    // A bad ttl is refused as such whatever the handle's state.
    if (!isValidTtl(this.ttl)) return expectError(outcome, InvalidLockOptionsError, 'invalid ttl');
    if (expected.releasedByCaller) return expectError(outcome, LockNotHeldError, 'released by its caller');
    if (expected.state === 'held') {
      valueOf(outcome);
      return 'extended';
    }
    const wasRemoved = expected.state === 'removed';
    // A removed lock's extension is refused: the loss is reported, at the latest now.
    if (wasRemoved) expected.state = 'lost';
    // Also when the loss is reported while the extension is on its way (a watch, a dead connection).
    return expectError(outcome, LockNotHeldError, 'not held');
  }

  toString(): string {
    return `Extend(handle ${this.pick} mod count, ttl ${this.ttl})`;
  }
}

/** The held lock on `key` deleted behind its holder's back, as an operator would; the key is free for others. */
class RemoveBehindBack extends LockCommand {
  constructor(private readonly key: Key) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    return holderOf(m, this.key) !== undefined;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const holder = holderOf(m, this.key) as ModelHandle;
    await r.subject.removeBehindBack(r.clients[holder.client].strategy, fullKey(r, this.key));
    holder.state = 'removed';
    m.removedSinceGrant.add(this.key);
    return 'removed';
  }

  toString(): string {
    return `RemoveBehindBack("${this.key}")`;
  }
}

type SectionEnd = 'returns' | 'throws' | 'key-removed';

/** withLock with waitTimeout 0: a held key times out; else the section runs, and the key is free afterwards. */
class WithLock extends LockCommand {
  constructor(
    private readonly client: number,
    private readonly key: Key,
    private readonly end: SectionEnd,
  ) {
    super();
  }

  check(): boolean {
    return true;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const thrown = new Error('thrown by the section');
    const { strategy, locks } = r.clients[this.client];
    let seen: { held: boolean; token: number | undefined } | undefined;
    const section = async (lock: Lock): Promise<string> => {
      seen = { held: lock.isHeld, token: lock.fencingToken };
      if (this.end === 'throws') throw thrown;
      if (this.end === 'key-removed') await r.subject.removeBehindBack(strategy, lock.keys[0]);
      return 'section result';
    };
    const outcome = await outcomeOf(locks.withLock(fullKey(r, this.key), section, { ttl: LEASE_MS, autoExtend: false, waitTimeout: 0 }));
    if (holderOf(m, this.key)) {
      expect(seen).toBeUndefined();
      return expectError(outcome, LockAcquireTimeoutError, 'key held');
    }
    expect(seen?.held).toBe(true);
    expectFreshToken(m, r, this.key, seen?.token);
    if (this.end === 'key-removed') m.removedSinceGrant.add(this.key);
    if (this.end === 'returns') expect(valueOf(outcome)).toBe('section result');
    if (this.end === 'throws') expect('error' in outcome && outcome.error).toBe(thrown);
    if (this.end === 'key-removed') expectError(outcome, LockLostError);
    await expectFree(m, r, this.key, 1 - this.client);
    return `section ${this.end}`;
  }

  toString(): string {
    return `WithLock(client ${this.client}, "${this.key}", section ${this.end})`;
  }
}

/**
 * close(): the client's locks are given back (free for the other client at once), a call through it is
 * refused, and a fresh client (new connections) takes its place. Holders are either not told (the README:
 * close() "releases what is held") or told with LockLostError 'closed' (a change under way in
 * lock-manager.ts): both are accepted, and the model records which one happened.
 */
class CloseAndReplace extends LockCommand {
  constructor(private readonly client: number) {
    super();
  }

  check(): boolean {
    return true;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const closing = r.clients[this.client];
    await closing.manager.close();
    expectError(await outcomeOf(closing.locks.tryAcquire(fullKey(r, 'a'), { ttl: LEASE_MS })), LockBackendUnavailableError);
    r.clients[this.client] = await newClient(r.subject, r.managers);
    const freed = m.handles.filter((handle) => handle.client === this.client && handle.state === 'held');
    for (const handle of freed) {
      const signal = r.handles[m.handles.indexOf(handle)].signal;
      if (signal.aborted) expect((signal.reason as LockLostError).reason).toBe('closed');
      handle.state = signal.aborted ? 'lost' : 'released';
    }
    // Also a removed lock's handle stops being ours once its client closed.
    for (const handle of m.handles) if (handle.client === this.client && handle.state === 'removed') handle.state = 'lost';
    for (const handle of freed) await expectFree(m, r, handle.key, 1 - this.client);
    return freed.length > 0 ? 'released held locks' : 'held nothing';
  }

  toString(): string {
    return `CloseAndReplace(client ${this.client})`;
  }
}

// ---------------------------------------------------------------------------------------------- arbitraries

const client = fc.integer({ min: 0, max: 1 });
const key = fc.constantFrom(...KEYS);
/** Long leases (nothing expires in the model), fractions rounded up, the longest. */
const validTtl = fc.constantFrom(LEASE_MS, 45_000, 100_000 / 3, 30_000.5, MAX_DURATION_MS);
const invalidTtl = fc.constantFrom(0, -1, Number.NaN, 3e9, 9, 0.5, MAX_DURATION_MS + 0.5);
const anyTtl = fc.oneof({ weight: 3, arbitrary: validTtl }, { weight: 1, arbitrary: invalidTtl });

/**
 * One weighted choice: runs are short, so acquisitions come often enough for the commands that need a
 * holder (waits, removals), and a close (which frees everything) comes seldom.
 */
const everyCommand = [
  fc.oneof(
    { weight: 4, arbitrary: fc.tuple(client, key, anyTtl).map(([c, k, ttl]): LockCommand => new TryAcquire(c, k, ttl)) },
    { weight: 1, arbitrary: fc.tuple(client, key, fc.integer({ min: 250, max: 400 })).map(([c, k, wait]): LockCommand => new TimedOutAcquire(c, k, wait)) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(client, key, fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined, freq: 3 }))
        .map(([c, k, after]): LockCommand => new AbortedAcquire(c, k, after)),
    },
    { weight: 2, arbitrary: fc.nat().map((pick): LockCommand => new Release(pick)) },
    { weight: 2, arbitrary: fc.tuple(fc.nat(), anyTtl).map(([pick, ttl]): LockCommand => new Extend(pick, ttl)) },
    {
      weight: 2,
      arbitrary: fc.tuple(client, key, fc.constantFrom<SectionEnd>('returns', 'throws', 'key-removed')).map(([c, k, end]): LockCommand => new WithLock(c, k, end)),
    },
    { weight: 1, arbitrary: key.map((k): LockCommand => new RemoveBehindBack(k)) },
    { weight: 1, arbitrary: client.map((c): LockCommand => new CloseAndReplace(c)) },
  ),
];

/**
 * The mix of a long run aimed at the aborts and closes (`PROPERTY_COMMANDS=abort-close`): acquisitions,
 * waits aborted or timed out behind them, releases and closes, nothing else. The model and every check are
 * the same as above.
 */
const abortAndClose = [
  fc.oneof(
    { weight: 4, arbitrary: fc.tuple(client, key).map(([c, k]): LockCommand => new TryAcquire(c, k, LEASE_MS)) },
    { weight: 1, arbitrary: fc.tuple(client, key, fc.integer({ min: 250, max: 400 })).map(([c, k, wait]): LockCommand => new TimedOutAcquire(c, k, wait)) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(client, key, fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined, freq: 6 }))
        .map(([c, k, after]): LockCommand => new AbortedAcquire(c, k, after)),
    },
    { weight: 2, arbitrary: fc.nat().map((pick): LockCommand => new Release(pick)) },
    { weight: 2, arbitrary: client.map((c): LockCommand => new CloseAndReplace(c)) },
  ),
];

const COMMAND_MIXES: Readonly<Record<string, typeof everyCommand>> = { all: everyCommand, 'abort-close': abortAndClose };
const commandMix = process.env.PROPERTY_COMMANDS || 'all';
if (!(commandMix in COMMAND_MIXES)) throw new Error(`PROPERTY_COMMANDS must be one of ${Object.keys(COMMAND_MIXES).join(', ')}, got "${commandMix}"`);
const commands = COMMAND_MIXES[commandMix];

// ---------------------------------------------------------------------------------------------- property

/** A fresh client of the subject (its own strategy and connections); `managers` keeps it for the final close. */
async function newClient(subject: ContractSubject, managers: LockManager[]): Promise<Client> {
  const strategy = await subject.create();
  const manager = new LockManager(strategy);
  managers.push(manager);
  return { strategy, manager, locks: new LockService(manager) };
}

/** Gives back whatever a run still holds, so that it leaves nothing behind on the server. */
async function releaseLeftovers(real: Real): Promise<void> {
  await Promise.all(real.handles.map((handle) => handle.release().catch(() => false)));
}

/** The property over one subject's two clients: random sequences of the commands, checked against the model. */
function modelProperty(subject: ContractSubject, clients: Client[], managers: LockManager[], tally: Map<string, number>) {
  return fc.asyncProperty(fc.commands(commands, { maxCommands: MAX_COMMANDS, size: 'max' }), async (sequence) => {
    await runSequence(subject, clients, managers, tally, sequence);
  });
}

/** Runs one sequence of commands against a fresh model, under keys of its own; gives back what it still holds. */
async function runSequence(subject: ContractSubject, clients: Client[], managers: LockManager[], tally: Map<string, number>, sequence: Iterable<fc.AsyncCommand<Model, Real>>): Promise<void> {
  const real: Real = { subject, clients, managers, handles: [], prefix: `prop:${randomUUID().slice(0, 8)}:`, tally };
  try {
    await fc.asyncModelRun(() => ({ model: { subject: subject.name, handles: [], lastToken: new Map<Key, number>(), removedSinceGrant: new Set<Key>(), timedOutAt: new Map<Key, number>() }, real }), sequence);
  } finally {
    await releaseLeftovers(real);
  }
}

/** A subject's two clients for a describe block, made before its tests and closed after them. */
function twoClients(subject: ContractSubject): { clients: Client[]; managers: LockManager[] } {
  const clients: Client[] = [];
  const managers: LockManager[] = [];
  beforeAll(async () => {
    clients.push(await newClient(subject, managers), await newClient(subject, managers));
  }, 30_000);
  afterAll(async () => {
    // Closing a manager twice is harmless: those that CloseAndReplace closed are simply closed again.
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
  }, 30_000);
  return { clients, managers };
}

// Subjects whose servers the global setup does not start (ensembles, clusters) stay with their own suites.
for (const subject of subjects.filter((candidate) => candidate.topology === undefined)) {
  describe(`lock service against a model (fast-check): ${subject.name}`, () => {
    const { clients, managers } = twoClients(subject);

    it(`agrees with the model over ${RUNS_PER_SUBJECT} random sequences of up to ${MAX_COMMANDS} commands`, async () => {
      const tally = new Map<string, number>();
      await fc.assert(modelProperty(subject, clients, managers, tally), {
        numRuns: RUNS_PER_SUBJECT,
        ...(TIME_BUDGET_MS === undefined ? {} : { interruptAfterTimeLimit: TIME_BUDGET_MS, markInterruptAsFailure: false }),
        ...(REPLAY.seed === undefined ? {} : { seed: REPLAY.seed, ...(REPLAY.path ? { path: REPLAY.path } : {}) }),
      });
      if (process.env.TALLY) console.log(`${subject.name}\n${[...tally].sort().map(([label, count]) => `  ${label}: ${count}`).join('\n')}`);
    }, SUBJECT_TIMEOUT_MS);
  });
}

// Found by the property above on a loaded machine, in a CI run and in 30 runs of this file with a busy CPU
// beside it (issue 41): after these sequences the key was still taken. Two causes:
// - close() ended a held lock by closing its connection on the client's side, and resolved then, before the
//   server had noticed and freed the lock (PostgreSQL seed 247865640, MariaDB seed -884983630; no abort in
//   either). test/integration/session-end.int.spec.ts reproduces it every time.
// - an aborted wait's cancel (KILL QUERY) could miss the statement it was meant for, which then took the lock
//   after acquire() had rejected (MariaDB seeds 294326734 and -410080901).
// close() now resolves once the server confirmed the end of the sessions it ended, and an aborted wait ends
// its session (KILL CONNECTION, pg_terminate_backend) instead of its statement. Each seed is replayed (the 25
// sequences of the run that failed, the same in every run), and each shrunk counterexample run 20 times.
const ISSUE_41: ReadonlyArray<{ readonly subject: string; readonly seed: number; readonly shrunk: () => LockCommand[] }> = [
  { subject: 'pessimistic (PostgreSQL)', seed: 247865640, shrunk: () => [new TryAcquire(1, 'b', LEASE_MS), new CloseAndReplace(1)] },
  { subject: 'pessimistic (MariaDB)', seed: -884983630, shrunk: () => [new TryAcquire(0, 'a', LEASE_MS), new Release(0), new TryAcquire(1, 'a', LEASE_MS), new CloseAndReplace(1)] },
  { subject: 'pessimistic (MariaDB)', seed: 294326734, shrunk: () => [new TryAcquire(1, 'a', LEASE_MS), new AbortedAcquire(0, 'a', 0), new CloseAndReplace(1)] },
  { subject: 'pessimistic (MariaDB)', seed: -410080901, shrunk: () => [new TryAcquire(1, 'a', LEASE_MS), new AbortedAcquire(0, 'a', 0), new CloseAndReplace(1)] },
  // The CI run of stop 45, before the sessions were ended (close() on a key that a section's removal touched).
  {
    subject: 'pessimistic (MariaDB)',
    seed: 379632757,
    shrunk: () => [new TryAcquire(1, 'b', LEASE_MS), new TryAcquire(0, 'b', 9), new WithLock(1, 'a', 'key-removed'), new TryAcquire(0, 'b', 2_147_483_647), new CloseAndReplace(1)],
  },
];

for (const { subject: name, seed, shrunk } of ISSUE_41) {
  const subject = subjects.find((candidate) => candidate.name === name) as ContractSubject;
  describe(`fixed: the key still taken after close() or an aborted wait, ${name}, seed ${seed}`, () => {
    const { clients, managers } = twoClients(subject);
    const tally = new Map<string, number>();

    it('replays the seed', async () => {
      await fc.assert(modelProperty(subject, clients, managers, tally), { seed, numRuns: 25, interruptAfterTimeLimit: 20_000, markInterruptAsFailure: false });
    }, 60_000);

    it(`runs the shrunk counterexample 20 times: ${shrunk().join(', ')}`, async () => {
      for (let round = 0; round < 20; round += 1) await runSequence(subject, clients, managers, tally, shrunk());
    }, 60_000);
  });
}

// Found by the property above on "row (SQLite)" (seed -212288556, shrunk to one command:
// WithLock(client 0, "a", section key-removed), after which the other client's tryAcquire got the section's
// token again). A key's first token is the server clock in microseconds, but SQLite's clock has millisecond
// resolution: a key whose row is deleted (by an operator, or by sweepIdle) and created again within the same
// millisecond gets a token already given out (a lower one, after take-overs). The README promises "Fencing
// tokens never repeat"; RowLockStrategy.sweepIdle says the new tokens "stay above the old ones".
describe('fixed: fencing tokens on SQLite repeated within a millisecond', () => {
  const sqlite = subjects.find((subject) => subject.name === 'row (SQLite)') as ContractSubject;
  const managers: LockManager[] = [];
  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
  });

  // The counterexample, repeated: it shows as soon as one round's grant, removal and new grant fall within one
  // millisecond (better-sqlite3 runs in-process): after 7 to 69 rounds in our runs, also with both CPUs busy.
  it('gives the next holder a higher token after the lease row was deleted behind the holder', async () => {
    const [holder, next] = await Promise.all([newClient(sqlite, managers), newClient(sqlite, managers)]);
    for (let round = 0; round < 500; round += 1) {
      const key = `prop:repeat:${randomUUID()}`;
      const first = await holder.locks.tryAcquire(key, { ttl: LEASE_MS, autoExtend: false });
      await sqlite.removeBehindBack(holder.strategy, key);
      const second = await next.locks.tryAcquire(key, { ttl: LEASE_MS, autoExtend: false });
      await Promise.all([first?.release(), second?.release()]);
      expect({ round, above: (second?.fencingToken ?? 0) > (first?.fencingToken ?? 0) }).toEqual({ round, above: true });
    }
    // 500 rounds take about 1.1 s alone; the default 5 s ran out once under a full run's load.
  }, 30_000);
});

// Found by the property above on "pessimistic (MariaDB)". An aborted wait can go on on the server after the
// caller's acquire() rejected with LockAcquireAbortedError, and take the row lock when the holder releases;
// the key then stays taken until the lock service gives that late grant back, so another client's tryAcquire
// right after the release finds it taken. Two ways in:
// - seed 1643340800, shrunk: TryAcquire(client 1, "b"), AbortedAcquire(client 0, "b", aborted after 0 ms of
//   waiting), Release(handle 0). The strategy listens for the abort only once the acquisition's connection is
//   open, without checking whether the caller gave up meanwhile: an abort while the connection opens is
//   missed, and the FOR UPDATE waits on for the whole waitTimeout (pinning one of the maxHeldConnections
//   slots). Before the changes under way in lock-manager.ts and pessimistic-lock.strategy.ts, the aborted
//   caller also waited its whole waitTimeout and, if the lock freed meanwhile, was handed the lock; those
//   changes ended that, and aborts before the slot is taken, not this window (6 and 7 rounds in 15 with an
//   abort 0 and 1 ms in). This test repeats it.
// - seed 68301623, shrunk: TryAcquire(client 0, "a"), AbortedAcquire(client 0, "a", after 211 ms), Release:
//   the abort is heard and a KILL QUERY sent, but with the lock-manager.ts change under way acquire()
//   rejects at once, before the KILL has landed: a release right after can still hand the row to the killed
//   wait (3 rounds in 20). Before that change the rejection came once the wait had ended on the server.
// - a CI run, round 12 (abort 0 ms in): the KILL QUERY reached the server before the FOR UPDATE it was meant
//   for, and the server dropped it; the wait went on past the rejection (one operation timeout later) and
//   took the row at the release. The cancel is now sent again until the wait has ended; the integration
//   tests' "cancel reached the server before the wait did" makes that race every time.
describe('fixed: an aborted pessimistic wait could take the lock after its acquire() rejected', () => {
  const pessimistic = subjects.find((subject) => subject.name === 'pessimistic (MariaDB)') as ContractSubject;
  const managers: LockManager[] = [];
  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
  });

  it('leaves the key free once an acquisition aborted early has rejected and the holder released', async () => {
    const [holderSide, waiterSide] = await Promise.all([newClient(pessimistic, managers), newClient(pessimistic, managers)]);
    for (let round = 0; round < 20; round += 1) {
      const key = `prop:abort:${randomUUID()}`;
      const holder = await holderSide.locks.tryAcquire(key, { ttl: LEASE_MS, autoExtend: false });
      expect(holder).not.toBeNull();
      const controller = new AbortController();
      const waiting = outcomeOf(waiterSide.locks.acquire(key, { ttl: LEASE_MS, autoExtend: false, waitTimeout: 10_000, signal: controller.signal }));
      await sleep(round % 2);
      controller.abort(new Error('cancelled by the caller'));
      const outcome = await waiting;
      if ('value' in outcome) await outcome.value.release();
      expectError(outcome, LockAcquireAbortedError);
      // Long enough for a missed abort's FOR UPDATE to reach the server and queue behind the holder.
      await sleep(50);
      await holder?.release();
      const next = await holderSide.locks.tryAcquire(key, { ttl: LEASE_MS, autoExtend: false });
      await next?.release();
      expect({ round, free: next !== null }).toEqual({ round, free: true });
    }
    // 20 rounds of about 60 ms, each aborting a wait on the server and replacing its connection: about 1.2 s,
    // several times that on a loaded 2-core machine (seen: over 5 s once).
  }, 30_000);
});
