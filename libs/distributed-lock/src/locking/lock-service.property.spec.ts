import fc from 'fast-check';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockLostError } from '../errors/lock-lost.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import type { Lock, LockHandle } from './lock-handle';
import { LockManager } from './lock-manager';
import { MAX_DURATION_MS, MIN_TTL_MS } from './lock-options';
import { LockService } from './lock-service';
import type { LockStrategy } from './lock-strategy.interface';

/*
 * Model-based property test of the lock service (fast-check `fc.commands` + `fc.asyncModelRun`).
 *
 * Three clients (a LockManager each) share ONE InMemoryLockStrategy, the "server". Random sequences of
 * acquire, tryAcquire, release, extend, aborted and timed-out waits, withLock sections, locks deleted behind
 * the holder's back, close and reopen of a client, and the passing of time run against the real service and
 * against a model of what must happen. Time is Vitest's fake clock, so lease expiry is modelled exactly: a
 * lease granted at t with ttl d is gone from t + d on (the in-memory strategy's rule), never earlier or later.
 * After every command the real handles must agree with the model: held or not, lost or not (and why), when
 * their lease ends, and never two held handles on one key.
 */

const START = Date.UTC(2030, 0, 1);
const CLIENTS = 3;
const KEYS = ['a', 'b', 'c'] as const;
type Key = (typeof KEYS)[number];

// ---------------------------------------------------------------------------------------------- model

type HandleState = 'held' | 'released' | 'lost';

/** What the model knows of one handle the commands obtained (same index as in `Real.handles`). */
interface ModelHandle {
  readonly client: number;
  readonly key: Key;
  state: HandleState;
  /** Why it was lost (state 'lost'). */
  lostReason?: 'expired' | 'removed' | 'closed';
  /** When its lease ends (fake ms since epoch). */
  expiresAt: number;
  /** The caller called release() on it (then extend() says "not held" before it looks at the ttl). */
  releasedByCaller: boolean;
}

interface Model {
  /** The fake clock, as the model advances it. */
  now: number;
  readonly handles: ModelHandle[];
  /** Per client: closed (and not reopened). */
  readonly closed: boolean[];
  /** Highest fencing token seen per key. */
  readonly lastToken: Map<Key, number>;
}

interface Real {
  readonly server: InMemoryLockStrategy;
  readonly managers: LockManager[];
  readonly services: LockService[];
  readonly handles: LockHandle[];
  /** A client of its own that checks a key is free (tryAcquire, then release). Never closed by commands. */
  readonly probe: LockService;
  /** Every manager created in the run, closed at its end. */
  readonly everyManager: LockManager[];
  /** How often each case of each command ran, over all runs: shows that the sequences reach every case. */
  readonly tally: Map<string, number>;
}

function holderOf(m: Readonly<Model>, key: Key): ModelHandle | undefined {
  return m.handles.find((handle) => handle.key === key && handle.state === 'held');
}

/** Moves the model's clock: every lease whose end is reached is lost ('expired'). */
function advanceModel(m: Model, ms: number): void {
  m.now += ms;
  for (const handle of m.handles) {
    if (handle.state === 'held' && handle.expiresAt <= m.now) {
      handle.state = 'lost';
      handle.lostReason = 'expired';
    }
  }
}

/** A ttl the service accepts: finite, and 10 ms to MAX_DURATION_MS once rounded up. */
function isValidTtl(ttl: number): boolean {
  return Number.isFinite(ttl) && Math.ceil(ttl) >= MIN_TTL_MS && Math.ceil(ttl) <= MAX_DURATION_MS;
}

/** Records a grant: its fencing token must be above every earlier token of the key. */
function expectFreshToken(m: Model, key: Key, token: number | undefined): void {
  expect(token).toEqual(expect.any(Number));
  const last = m.lastToken.get(key) ?? 0;
  expect(token).toBeGreaterThan(last);
  m.lastToken.set(key, token as number);
}

// ---------------------------------------------------------------------------------------------- real side

type Outcome<T> = { value: T } | { error: unknown };

/**
 * Advances the fake clock by `ms` (0: lets every pending promise callback run) and returns how `promise`
 * ended. A promise the model expects settled that is still pending fails the run instead of hanging it.
 */
async function outcomeAfter<T>(promise: Promise<T>, ms: number): Promise<Outcome<T>> {
  let outcome: Outcome<T> | undefined;
  void promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  await vi.advanceTimersByTimeAsync(ms);
  if (!outcome) throw new Error(`still pending after ${ms} ms of fake time; the model expected it to have settled`);
  return outcome;
}

/** Expects `outcome` to be a rejection with an error of `type`; returns `label` (the case, for the tally). */
function expectError(outcome: Outcome<unknown>, type: abstract new (...args: never[]) => Error, label = ''): string {
  if ('value' in outcome) throw new Error(`expected ${type.name}, got the value ${String(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(type);
  return label;
}

function valueOf<T>(outcome: Outcome<T>): T {
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

/** A client of the shared in-memory "server": every call goes to it, except close(), which is the client's own. */
function clientOf(server: InMemoryLockStrategy): LockStrategy {
  return new Proxy(server, {
    get: (target, property) => (property === 'close' ? async () => undefined : Reflect.get(target, property, target)),
  });
}

/** The model says `key` is free: a client of its own must get it at once (and gives it back). */
async function expectFree(m: Model, r: Real, key: Key): Promise<void> {
  const probe = valueOf(await outcomeAfter(r.probe.tryAcquire(key, { ttl: 1_000, autoExtend: false }), 0));
  expect(probe).not.toBeNull();
  expectFreshToken(m, key, probe?.fencingToken);
  expect(valueOf(await outcomeAfter((probe as LockHandle).release(), 0))).toBe(true);
}

/** After every command: the real handles agree with the model, and no key has two held handles. */
function expectAgreement(m: Model, r: Real): void {
  expect(Date.now()).toBe(m.now);
  expect(r.handles).toHaveLength(m.handles.length);
  const heldPerKey = new Map<string, number>();
  m.handles.forEach((expected, index) => {
    const handle = r.handles[index];
    const at = `handle #${index} (client ${expected.client}, key "${expected.key}")`;
    expect({ at, isHeld: handle.isHeld }).toEqual({ at, isHeld: expected.state === 'held' });
    expect({ at, aborted: handle.signal.aborted }).toEqual({ at, aborted: expected.state === 'lost' });
    if (expected.state === 'lost') {
      expect(handle.signal.reason).toBeInstanceOf(LockLostError);
      expect({ at, reason: (handle.signal.reason as LockLostError).reason }).toEqual({ at, reason: expected.lostReason });
    }
    if (expected.state === 'held') {
      expect({ at, expiresAt: handle.expiresAt }).toEqual({ at, expiresAt: expected.expiresAt });
      expect(expected.expiresAt).toBeGreaterThan(m.now);
    }
    if (handle.isHeld) heldPerKey.set(handle.key, (heldPerKey.get(handle.key) ?? 0) + 1);
  });
  for (const [key, count] of heldPerKey) expect({ key, held: count }).toEqual({ key, held: 1 });
}

// ---------------------------------------------------------------------------------------------- commands

/** Every command acts on both sides, then checks that they still agree. */
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

/** tryAcquire with an explicit ttl (autoExtend off): granted iff the key is free; an invalid ttl is refused first. */
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
    const outcome = await outcomeAfter(r.services[this.client].tryAcquire(this.key, { ttl: this.ttl, autoExtend: false }), 0);
    if (!isValidTtl(this.ttl)) return expectError(outcome, InvalidLockOptionsError, 'invalid ttl');
    if (m.closed[this.client]) return expectError(outcome, LockBackendUnavailableError, 'client closed');
    const handle = valueOf(outcome);
    if (holderOf(m, this.key)) {
      expect(handle).toBeNull();
      return 'key held';
    }
    expect(handle).not.toBeNull();
    const granted = handle as LockHandle;
    expectFreshToken(m, this.key, granted.fencingToken);
    m.handles.push({ client: this.client, key: this.key, state: 'held', expiresAt: m.now + Math.ceil(this.ttl), releasedByCaller: false });
    r.handles.push(granted);
    return 'granted';
  }

  toString(): string {
    return `TryAcquire(client ${this.client}, "${this.key}", ttl ${this.ttl})`;
  }
}

/**
 * acquire with a wait: a free key is granted at once; a key whose holder's lease ends within the wait is
 * handed over at that end (the new lease counts from the hand-over); otherwise the wait times out.
 */
class Acquire extends LockCommand {
  constructor(
    private readonly client: number,
    private readonly key: Key,
    private readonly ttl: number,
    private readonly wait: number,
  ) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    // The holder's lease ending at the very millisecond the wait does is a race either outcome may win.
    const holder = holderOf(m, this.key);
    return m.closed[this.client] || holder === undefined || holder.expiresAt !== m.now + this.wait;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const acquiring = r.services[this.client].acquire(this.key, { ttl: this.ttl, autoExtend: false, waitTimeout: this.wait });
    if (m.closed[this.client]) return expectError(await outcomeAfter(acquiring, 0), LockBackendUnavailableError, 'client closed');
    const holder = holderOf(m, this.key);
    if (holder && holder.expiresAt > m.now + this.wait) {
      const outcome = await outcomeAfter(acquiring, this.wait);
      advanceModel(m, this.wait);
      return expectError(outcome, LockAcquireTimeoutError, 'timed out');
    }
    const grantedAfter = holder ? holder.expiresAt - m.now : 0;
    const handle = valueOf(await outcomeAfter(acquiring, grantedAfter));
    advanceModel(m, grantedAfter);
    expectFreshToken(m, this.key, handle.fencingToken);
    m.handles.push({ client: this.client, key: this.key, state: 'held', expiresAt: m.now + Math.ceil(this.ttl), releasedByCaller: false });
    r.handles.push(handle);
    return holder ? 'handed over at the holder\'s lease end' : 'granted at once';
  }

  toString(): string {
    return `Acquire(client ${this.client}, "${this.key}", ttl ${this.ttl}, waitTimeout ${this.wait})`;
  }
}

/** An acquisition cancelled through its AbortSignal: before it starts, or while it waits behind a holder. */
class AbortedAcquire extends LockCommand {
  constructor(
    private readonly client: number,
    private readonly key: Key,
    /** undefined: the signal is aborted before the call; else abort after this many ms of waiting. */
    private readonly abortAfter: number | undefined,
  ) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    if (this.abortAfter === undefined || m.closed[this.client]) return true;
    // A waiting acquisition needs a holder that is still there when the abort comes.
    const holder = holderOf(m, this.key);
    return holder !== undefined && holder.expiresAt > m.now + this.abortAfter;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const controller = new AbortController();
    if (this.abortAfter === undefined) controller.abort(new Error('cancelled by the caller'));
    const acquiring = r.services[this.client].acquire(this.key, { ttl: 1_000, autoExtend: false, waitTimeout: 10_000, signal: controller.signal });
    if (m.closed[this.client]) return expectError(await outcomeAfter(acquiring, 0), LockBackendUnavailableError, 'client closed');
    if (this.abortAfter === undefined) return expectError(await outcomeAfter(acquiring, 0), LockAcquireAbortedError, 'aborted before the call');
    let settled = false;
    void acquiring.then(
      () => (settled = true),
      () => (settled = true),
    );
    await vi.advanceTimersByTimeAsync(this.abortAfter);
    advanceModel(m, this.abortAfter);
    expect(settled).toBe(false);
    controller.abort(new Error('cancelled by the caller'));
    return expectError(await outcomeAfter(acquiring, 0), LockAcquireAbortedError, 'aborted while waiting');
  }

  toString(): string {
    return this.abortAfter === undefined
      ? `AbortedAcquire(client ${this.client}, "${this.key}", aborted before the call)`
      : `AbortedAcquire(client ${this.client}, "${this.key}", aborted after ${this.abortAfter} ms of waiting)`;
  }
}

/** release(): true iff the handle still held the lock; a lost handle says false and keeps its loss. */
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
    const released = valueOf(await outcomeAfter(r.handles[index].release(), 0));
    expect({ index, released }).toEqual({ index, released: before === 'held' });
    expected.releasedByCaller = true;
    if (before !== 'held') return before;
    expected.state = 'released';
    await expectFree(m, r, expected.key);
    return 'held';
  }

  toString(): string {
    return `Release(handle ${this.pick} mod count)`;
  }
}

/**
 * extend(ttl): a ttl that is not 10 ms..MAX_DURATION_MS once rounded up is refused with
 * InvalidLockOptionsError and changes nothing; a valid one moves the lease's end to now + ttl (rounded up)
 * iff the lock is still held, and says LockNotHeldError otherwise.
 */
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
    const outcome = await outcomeAfter(r.handles[index].extend(this.ttl), 0);
    // A bad ttl is refused as such whatever the handle's state.
    if (!isValidTtl(this.ttl)) return expectError(outcome, InvalidLockOptionsError, 'invalid ttl');
    if (expected.releasedByCaller) return expectError(outcome, LockNotHeldError, 'released by its caller');
    if (expected.state !== 'held') return expectError(outcome, LockNotHeldError, `not held (${expected.state})`);
    valueOf(outcome);
    expected.expiresAt = m.now + Math.ceil(this.ttl);
    return 'extended';
  }

  toString(): string {
    return `Extend(handle ${this.pick} mod count, ttl ${this.ttl})`;
  }
}

/** Time passes: leases whose end comes are lost ('expired'), and their handles' signals abort at that moment. */
class Tick extends LockCommand {
  constructor(private readonly ms: number) {
    super();
  }

  check(): boolean {
    return true;
  }

  protected async act(m: Model): Promise<string> {
    const heldBefore = m.handles.filter((handle) => handle.state === 'held').length;
    await vi.advanceTimersByTimeAsync(this.ms);
    advanceModel(m, this.ms);
    return m.handles.filter((handle) => handle.state === 'held').length < heldBefore ? 'leases expired' : 'nothing expired';
  }

  toString(): string {
    return `Tick(${this.ms} ms)`;
  }
}

type SectionEnd = 'returns' | 'throws' | 'key-removed' | 'outlives-lease';

/**
 * withLock(key, fn) with waitTimeout 0: a held key times out; otherwise fn runs under the lock, and the key
 * is free afterwards whatever fn did. fn returning: its value; fn throwing: the same error; the key deleted
 * behind fn's back (forceRelease) or fn outliving the lease: LockLostError with 'removed' / 'expired'.
 */
class WithLock extends LockCommand {
  constructor(
    private readonly client: number,
    private readonly key: Key,
    private readonly ttl: number,
    private readonly end: SectionEnd,
  ) {
    super();
  }

  check(): boolean {
    return true;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const thrown = new Error('thrown by the section');
    let seen: { held: boolean; token: number | undefined; afterRemoval?: string } | undefined;
    const section = async (lock: Lock): Promise<string> => {
      seen = { held: lock.isHeld, token: lock.fencingToken };
      if (this.end === 'throws') throw thrown;
      if (this.end === 'key-removed') {
        r.server.forceRelease(lock.keys[0]);
        // The in-memory strategy pushes the removal: the signal aborts at once, inside the section.
        seen.afterRemoval = lock.signal.aborted ? (lock.signal.reason as LockLostError).reason : 'not aborted';
      }
      if (this.end === 'outlives-lease') {
        await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
      }
      return 'section result';
    };
    const running = r.services[this.client].withLock(this.key, section, { ttl: this.ttl, autoExtend: false, waitTimeout: 0 });
    if (m.closed[this.client]) return expectError(await outcomeAfter(running, 0), LockBackendUnavailableError, 'client closed');
    if (holderOf(m, this.key)) {
      expectError(await outcomeAfter(running, 0), LockAcquireTimeoutError);
      expect(seen).toBeUndefined();
      return 'key held';
    }
    const lease = Math.ceil(this.ttl);
    const outcome = await outcomeAfter(running, this.end === 'outlives-lease' ? lease : 0);
    if (this.end === 'outlives-lease') advanceModel(m, lease);
    expect(seen?.held).toBe(true);
    expectFreshToken(m, this.key, seen?.token);
    switch (this.end) {
      case 'returns':
        expect(valueOf(outcome)).toBe('section result');
        break;
      case 'throws':
        expect('error' in outcome && outcome.error).toBe(thrown);
        break;
      case 'key-removed':
        expect(seen?.afterRemoval).toBe('removed');
        expectError(outcome, LockLostError);
        expect((outcome as { error: LockLostError }).error.reason).toBe('removed');
        break;
      case 'outlives-lease':
        expectError(outcome, LockLostError);
        expect((outcome as { error: LockLostError }).error.reason).toBe('expired');
        break;
    }
    await expectFree(m, r, this.key);
    return `section ${this.end}`;
  }

  toString(): string {
    return `WithLock(client ${this.client}, "${this.key}", ttl ${this.ttl}, section ${this.end})`;
  }
}

/** The key's lock deleted as an operator would: the holder is told at once ('removed'); the key is free. */
class RemoveBehindBack extends LockCommand {
  constructor(private readonly key: Key) {
    super();
  }

  check(): boolean {
    return true;
  }

  protected async act(m: Model, r: Real): Promise<string> {
    r.server.forceRelease(this.key);
    await vi.advanceTimersByTimeAsync(0);
    const holder = holderOf(m, this.key);
    if (holder) {
      holder.state = 'lost';
      holder.lostReason = 'removed';
    }
    await expectFree(m, r, this.key);
    return holder ? 'holder told' : 'key was free';
  }

  toString(): string {
    return `RemoveBehindBack("${this.key}")`;
  }
}

/**
 * close(): the client's held locks are given back (free for others at once) and later calls through it fail.
 * Their holders are either not told (the README: close() "releases what is held") or told with
 * LockLostError 'closed' (a change under way in lock-manager.ts): both are accepted, and the model records
 * which one happened, so every later command checks the handle exactly.
 */
class Close extends LockCommand {
  constructor(private readonly client: number) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    return !m.closed[this.client];
  }

  protected async act(m: Model, r: Real): Promise<string> {
    valueOf(await outcomeAfter(r.managers[this.client].close(), 0));
    m.closed[this.client] = true;
    const freed = m.handles.filter((handle) => handle.client === this.client && handle.state === 'held');
    let told = 0;
    for (const handle of freed) {
      const signal = r.handles[m.handles.indexOf(handle)].signal;
      if (signal.aborted) {
        expect(signal.reason).toBeInstanceOf(LockLostError);
        expect((signal.reason as LockLostError).reason).toBe('closed');
        told += 1;
      }
      handle.state = signal.aborted ? 'lost' : 'released';
      if (signal.aborted) handle.lostReason = 'closed';
    }
    for (const handle of freed) await expectFree(m, r, handle.key);
    if (freed.length === 0) return 'held nothing';
    return told === 0 ? 'released held locks' : told === freed.length ? 'released held locks, holders told (closed)' : 'released held locks, some holders told';
  }

  toString(): string {
    return `Close(client ${this.client})`;
  }
}

/** A closed client comes back as a fresh manager over the same server (an app instance restarting). */
class Reopen extends LockCommand {
  constructor(private readonly client: number) {
    super();
  }

  check(m: Readonly<Model>): boolean {
    return m.closed[this.client];
  }

  protected async act(m: Model, r: Real): Promise<string> {
    const manager = new LockManager(clientOf(r.server));
    r.everyManager.push(manager);
    r.managers[this.client] = manager;
    r.services[this.client] = new LockService(manager);
    m.closed[this.client] = false;
    return 'reopened';
  }

  toString(): string {
    return `Reopen(client ${this.client})`;
  }
}

// ---------------------------------------------------------------------------------------------- arbitraries

const client = fc.integer({ min: 0, max: CLIENTS - 1 });
const key = fc.constantFrom(...KEYS);
/** Valid lease lengths: whole and fractional ms (rounded up), the shortest, and the longest once rounded up. */
const validTtl = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: MIN_TTL_MS, max: 400 }) },
  { weight: 2, arbitrary: fc.constantFrom(9.5, 10_000 / 3 / 10, 100.001, MAX_DURATION_MS - 0.5, MAX_DURATION_MS) },
);
/** Refused: 0, negatives, NaN, infinities, too short once rounded up, too long (3e9, MAX + 0.5). */
const invalidTtl = fc.constantFrom(0, -1, Number.NaN, Number.POSITIVE_INFINITY, 9, 0.5, 3e9, MAX_DURATION_MS + 0.5);
const anyTtl = fc.oneof({ weight: 4, arbitrary: validTtl }, { weight: 1, arbitrary: invalidTtl });
/** Leases short enough to end within a run: what withLock's sections may outlive. */
const sectionTtl = fc.oneof(fc.integer({ min: MIN_TTL_MS, max: 400 }), fc.constant(10_000 / 3 / 10));

const commands = [
  fc.tuple(client, key, anyTtl).map(([c, k, ttl]) => new TryAcquire(c, k, ttl)),
  fc.tuple(client, key, validTtl, fc.integer({ min: 0, max: 300 })).map(([c, k, ttl, wait]) => new Acquire(c, k, ttl, wait)),
  fc.tuple(client, key, fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined })).map(([c, k, after]) => new AbortedAcquire(c, k, after)),
  fc.nat().map((pick) => new Release(pick)),
  fc.tuple(fc.nat(), anyTtl).map(([pick, ttl]) => new Extend(pick, ttl)),
  fc.integer({ min: 0, max: 400 }).map((ms) => new Tick(ms)),
  fc
    .tuple(client, key, sectionTtl, fc.constantFrom<SectionEnd>('returns', 'throws', 'key-removed', 'outlives-lease'))
    .map(([c, k, ttl, end]) => new WithLock(c, k, ttl, end)),
  key.map((k) => new RemoveBehindBack(k)),
  // Half as often as the others: a closed client makes every later command through it a plain refusal.
  fc.oneof(
    client.map((c) => new Close(c)),
    client.map((c) => new Reopen(c)),
  ),
];

/** Cases every 100 runs reach many times (10 to 60 each, measured): none may go missing unnoticed. */
const CASES_THAT_MUST_RUN = [
  'Acquire: granted at once',
  "Acquire: handed over at the holder's lease end",
  'Acquire: timed out',
  'AbortedAcquire: aborted before the call',
  'AbortedAcquire: aborted while waiting',
  'TryAcquire: granted',
  'TryAcquire: key held',
  'TryAcquire: invalid ttl',
  'Release: held',
  'Release: lost',
  'Extend: extended',
  'Extend: invalid ttl',
  'Tick: leases expired',
  'WithLock: section returns',
  'WithLock: section throws',
  'WithLock: section key-removed',
  'WithLock: section outlives-lease',
  'RemoveBehindBack: holder told',
];

// ---------------------------------------------------------------------------------------------- property

function setUp(tally: Map<string, number>): { model: Model; real: Real } {
  vi.clearAllTimers();
  vi.setSystemTime(START);
  const server = new InMemoryLockStrategy();
  const managers = Array.from({ length: CLIENTS }, () => new LockManager(clientOf(server)));
  const probeManager = new LockManager(clientOf(server));
  return {
    model: { now: START, handles: [], closed: managers.map(() => false), lastToken: new Map() },
    real: {
      server,
      managers,
      services: managers.map((manager) => new LockService(manager)),
      handles: [],
      probe: new LockService(probeManager),
      everyManager: [...managers, probeManager],
      tally,
    },
  };
}

/** Closes every manager of the run (ending any wait a failing run left behind), then the server. */
async function tearDown(real: Real): Promise<void> {
  let done = false;
  const closing = Promise.all(real.everyManager.map((manager) => manager.close().catch(() => undefined))).finally(() => (done = true));
  for (let round = 0; round < 20 && !done; round += 1) await vi.advanceTimersByTimeAsync(round === 0 ? 0 : 1_000);
  await closing;
  await real.server.close();
  vi.clearAllTimers();
}

describe('LockService against a model (fast-check, in-memory strategy, fake time)', () => {
  beforeAll(() => vi.useFakeTimers({ now: START }));
  afterAll(() => vi.useRealTimers());

  it('agrees with the model over random sequences of acquire, release, extend, abort, withLock, close and expiry', async () => {
    const tally = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'max' }), async (sequence) => {
        const { model, real } = setUp(tally);
        try {
          await fc.asyncModelRun(() => ({ model, real }), sequence);
        } finally {
          await tearDown(real);
        }
      }),
      { numRuns: 100 },
    );
    if (process.env.TALLY) console.log([...tally].sort().map(([k, v]) => `${k}: ${v}`).join('\n'));
    // A model that passes because the sequences never reach a case proves nothing about it.
    expect(CASES_THAT_MUST_RUN.filter((label) => !tally.has(label))).toEqual([]);
  }, 60_000);

  // Found (and since fixed) by the bounded model on etcd (test/contract/property.spec.ts, seed 1537691323, shrunk:
  // TryAcquire(client 0, "a"), AbortedAcquire(client 0, "a", after 43 ms), RemoveBehindBack("a"), Extend(handle 0,
  // 30000.5) resolved): when the loss is reported while an extension is on its way (etcd's watch saw the key
  // deleted), HeldLock.renew() returns true because the lock is no longer 'held', so extend() resolves as if
  // it had worked, on a lock that is lost. Lock.extend's JSDoc: "Throws LockNotHeldError when the lock is no
  // longer ours". Here the removal is pushed between the extension's call and its answer, every time.
  it('rejects an extend() during which the lock was reported lost', async () => {
    const server = new InMemoryLockStrategy();
    const manager = new LockManager(server);
    try {
      const handle = (await new LockService(manager).tryAcquire('a', { ttl: 1_000, autoExtend: false })) as LockHandle;
      const extending = handle.extend(2_000);
      server.forceRelease('a');
      await expect(extending).rejects.toBeInstanceOf(LockNotHeldError);
    } finally {
      await manager.close();
    }
  });

  // Found (and since fixed) by this model (shrunk: TryAcquire(client 0, "a", ttl 10), Release(handle 0), Extend(handle 0, ttl 0)).
  // The README and Lock.extend's JSDoc say a bad ttl is refused with InvalidLockOptionsError; a handle its
  // caller released checks "released" first and says LockNotHeldError instead (a handle released by close()
  // or lost checked the ttl first).
  it('refuses an invalid extend ttl with InvalidLockOptionsError also on a handle its caller released', async () => {
    const manager = new LockManager(new InMemoryLockStrategy());
    try {
      const handle = await new LockService(manager).tryAcquire('a', { ttl: 10, autoExtend: false });
      await handle?.release();
      await expect(handle?.extend(0)).rejects.toBeInstanceOf(InvalidLockOptionsError);
    } finally {
      await manager.close();
    }
  });
});
