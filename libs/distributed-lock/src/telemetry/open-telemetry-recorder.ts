import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as OpenTelemetryApi from '@opentelemetry/api';
import type { LockLostReason } from '../errors/lock-lost.error';
import type { LockEventMap } from '../locking/lock-events';
import type { LeaseGrant, LockMode } from '../locking/lock-lease';
import type {
  AcquisitionObservation,
  AcquisitionOutcome,
  HoldObservation,
  LockObserver,
  ObservedAcquisition,
  ObservedLockManager,
} from '../locking/lock-observer';
import { loadPeerDependency } from '../strategies/load-peer-dependency';
import { keyAttribute, keyInText } from './key-attribute';
import { LOCK_DURATION_BUCKETS, LOCK_TELEMETRY } from './lock-telemetry-names';
import { validateOpenTelemetryOptions, type OpenTelemetryLockObserverOptions } from './lock-telemetry-options';

type Api = typeof OpenTelemetryApi;
type Attributes = OpenTelemetryApi.Attributes;

const { spans, events, metrics, attributes: names } = LOCK_TELEMETRY;
const OUTCOMES: readonly AcquisitionOutcome[] = ['acquired', 'timeout', 'aborted', 'error'];
/** What the figures of an acquisition are kept under: its lock's mode, or "permit" for a semaphore's. */
type Lane = LockMode | 'permit';
const LANES: readonly Lane[] = ['exclusive', 'shared', 'permit'];

/**
 * How long an ended wait or hold waits to be written to the SDK, in ms, with the others that end meanwhile.
 * A timer per batch rather than a `setImmediate` per lock: on a Redis lock taken and released in a loop, a
 * `setImmediate` after each step makes the event loop turn once more per step, which costs the loop far more
 * than one timer per batch (measure with the benchmark's "redis-telemetry" subject, docs/observability.md).
 * The times written are those noted when the lock ended, so the delay changes no figure.
 */
export const OBSERVER_WRITE_DELAY_MS = 10;

type PerMode<T> = Record<Lane, T>;

/** What the observer keeps per lock manager: its attributes, built once, and its acquisition counts. */
interface ManagerState {
  readonly manager: ObservedLockManager;
  readonly strategy: Attributes;
  /** Per mode, then per outcome: the attributes of the wait histogram and of the acquisition count. */
  readonly byOutcome: PerMode<Record<AcquisitionOutcome, Attributes>>;
  readonly acquisitions: PerMode<Record<AcquisitionOutcome, number>>;
  /** Per mode: the attributes of the hold histogram, released or lost. */
  readonly held: PerMode<Record<'released' | 'lost', Attributes>>;
  /** Per mode: the span's attributes but the key. */
  readonly spanAttributes: PerMode<Attributes>;
  readonly listeners: {
    readonly extended: (...args: LockEventMap['extended']) => void;
    readonly lost: (...args: LockEventMap['lost']) => void;
    readonly backgroundError: (...args: LockEventMap['backgroundError']) => void;
  };
}

function perMode<T>(make: (lane: Lane) => T): PerMode<T> {
  return { exclusive: make('exclusive'), shared: make('shared'), permit: make('permit') };
}

/** The attributes that tell a lane apart: a lock's mode; a permit's mode ("shared") and kind. */
function laneAttributes(lane: Lane): Attributes {
  return lane === 'permit' ? { [names.mode]: 'shared', [names.kind]: 'permit' } : { [names.mode]: lane };
}

function perOutcome<T>(make: (outcome: AcquisitionOutcome) => T): Record<AcquisitionOutcome, T> {
  return { acquired: make('acquired'), timeout: make('timeout'), aborted: make('aborted'), error: make('error') };
}

function errorType(error: unknown): string {
  return error instanceof Error ? error.constructor.name : typeof error;
}

/** The library's version, for the instrumentation scope (undefined if its manifest cannot be read). */
function libraryVersion(): string | undefined {
  try {
    // src/telemetry and dist/telemetry are both two folders below the package's manifest.
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * One acquisition, from its start to its failure or, once granted, to its release or loss. One object per
 * acquisition observes both the wait and the hold. On the caller's path it only notes times and outcomes;
 * the span and the histograms are written by `flush`, which the observer runs a little later, for every lock
 * that ended in between (`OBSERVER_WRITE_DELAY_MS`), so that the lock's own latency does not include the
 * SDK's work. A section that needs
 * the span as its parent (`run`) gets it at once.
 */
class ObservedLock implements AcquisitionObservation, HoldObservation {
  private span: OpenTelemetryApi.Span | undefined;
  private outcome: AcquisitionOutcome | undefined;
  private waitedMs = 0;
  private grantedAt: number | undefined;
  private fencingToken: number | undefined;
  private owner: string | undefined;
  private error: unknown;
  private waitRecorded = false;
  /** How the hold ended, once it has (a loss ends it at once; the release that follows changes nothing). */
  private hold: { readonly outcome: 'released' | 'lost'; readonly heldMs: number; readonly at: number; readonly reason?: LockLostReason } | undefined;
  private finished = false;

  constructor(
    private readonly observer: OpenTelemetryRecorder,
    private readonly api: Api,
    readonly state: ManagerState,
    private readonly mode: Lane,
    private readonly key: string,
    /** A permit's semaphore size and weight, written on its span. */
    private readonly permit: ObservedAcquisition['permit'],
    private readonly parent: OpenTelemetryApi.Context,
    /** `performance.now()` when the acquisition started: every time given to the span is one. */
    private readonly startedAt: number,
  ) {}

  waitEnded(outcome: AcquisitionOutcome, waitedMs: number, grant: LeaseGrant | undefined, error: unknown): HoldObservation | undefined {
    this.state.acquisitions[this.mode][outcome] += 1;
    this.outcome = outcome;
    this.waitedMs = waitedMs;
    this.observer.later(this);
    if (!grant) {
      this.error = error;
      return undefined;
    }
    this.grantedAt = performance.now();
    this.fencingToken = grant.fencingToken;
    this.owner = grant.owner;
    this.observer.holdStarted(grant.owner, this);
    return this;
  }

  /** The section of `withLock` / `@Locked` runs with this span as the active one: what it traces nests under it. */
  run<T>(fn: () => T): T {
    const { context, trace } = this.api;
    return context.with(trace.setSpan(context.active(), this.ensureSpan()), fn);
  }

  holdEnded(heldMs: number): void {
    if (this.owner !== undefined) this.observer.holdFinished(this.owner);
    if (this.hold) return;
    this.hold = { outcome: 'released', heldMs, at: performance.now() };
    this.observer.later(this);
  }

  extended(expiresAt: number): void {
    if (this.hold) return;
    const span = this.ensureSpan();
    if (span.isRecording()) span.addEvent(events.extended, { [names.expiresAt]: expiresAt }, performance.now());
  }

  /** A loss ends the span then (the clean-up that follows can take an operation timeout). */
  lost(reason: LockLostReason, heldMs: number): void {
    if (this.hold) return;
    this.hold = { outcome: 'lost', heldMs, at: performance.now(), reason };
    this.observer.later(this);
  }

  /** Writes what is known so far: the wait once it has ended, the span and the hold once the lock has. */
  flush(): void {
    const { state, mode } = this;
    if (this.outcome === undefined) return;
    if (!this.waitRecorded) {
      this.waitRecorded = true;
      this.observer.recordWait(this.waitedMs / 1000, state.byOutcome[mode][this.outcome]);
    }
    const failed = this.grantedAt === undefined;
    if (this.finished || (!failed && !this.hold)) return;
    this.finished = true;
    const span = this.ensureSpan();
    const recording = span.isRecording();
    const attributes: Attributes = recording ? { [names.outcome]: this.outcome, [names.waitDuration]: this.waitedMs / 1000 } : {};
    if (recording && this.fencingToken !== undefined) attributes[names.fencingToken] = this.fencingToken;
    const { hold } = this;
    if (failed) {
      if (recording && this.error !== undefined) {
        attributes[names.errorType] = errorType(this.error);
        span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: this.observer.statusMessage(this.error, this.key) });
      }
    } else if (hold) {
      this.observer.recordHold(hold.heldMs / 1000, state.held[mode][hold.outcome]);
      if (recording) {
        attributes[names.holdOutcome] = hold.outcome;
        attributes[names.holdDuration] = hold.heldMs / 1000;
        if (hold.reason !== undefined) {
          attributes[names.lostReason] = hold.reason;
          span.addEvent(events.lost, { [names.lostReason]: hold.reason }, hold.at);
          span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: `lock lost: ${hold.reason}` });
        }
      }
    }
    if (recording) span.setAttributes(attributes);
    span.end(hold ? hold.at : this.startedAt + this.waitedMs);
  }

  private ensureSpan(): OpenTelemetryApi.Span {
    if (this.span) return this.span;
    const span = this.observer.startSpan(this.state.spanAttributes[this.mode], this.startedAt, this.parent);
    if (span.isRecording()) {
      const key = this.observer.keyAttribute(this.key);
      if (key) span.setAttribute(key[0], key[1]);
      if (this.permit) span.setAttributes({ [names.permits]: this.permit.permits, [names.weight]: this.permit.weight });
      if (this.grantedAt !== undefined) span.addEvent(events.granted, this.grantedAt);
    }
    this.span = span;
    return span;
  }
}

/**
 * The work behind `OpenTelemetryLockObserver`. Its declarations name `@opentelemetry/api`'s types, so it is
 * kept out of the public entry points: an application without that optional peer must still compile against
 * the library's declarations (with `skipLibCheck: false`).
 */
export class OpenTelemetryRecorder implements LockObserver {
  private readonly api: Api;
  private readonly tracer: OpenTelemetryApi.Tracer;
  private readonly waitDuration: OpenTelemetryApi.Histogram;
  private readonly holdDuration: OpenTelemetryApi.Histogram;
  private readonly losses: OpenTelemetryApi.Counter;
  private readonly extensions: OpenTelemetryApi.Counter;
  private readonly backgroundErrors: OpenTelemetryApi.Counter;
  private readonly keyOf: (key: string) => readonly [string, string] | undefined;
  private readonly keyInMessage: (text: string, key: string) => string;
  private readonly managers = new Map<ObservedLockManager, ManagerState>();
  /** Held locks by owner id (unique per acquisition), for the extensions and losses the events report. */
  private readonly holds = new Map<string, ObservedLock>();
  /** Locks with something to write (see `flush`). */
  private pending: ObservedLock[] = [];
  private readonly flushLater = (): void => this.flush();

  /** Throws `MissingPeerDependencyError` when `@opentelemetry/api` is not installed, `InvalidLockOptionsError` for a bad option. */
  constructor(options: OpenTelemetryLockObserverOptions = {}) {
    const checked = validateOpenTelemetryOptions(options, 'telemetry');
    this.api = loadPeerDependency<Api>('@opentelemetry/api', 'telemetry');
    const version = libraryVersion();
    const tracerProvider = (checked.tracerProvider as OpenTelemetryApi.TracerProvider | undefined) ?? this.api.trace.getTracerProvider();
    const meterProvider = (checked.meterProvider as OpenTelemetryApi.MeterProvider | undefined) ?? this.api.metrics.getMeterProvider();
    this.tracer = tracerProvider.getTracer(LOCK_TELEMETRY.scope, version);
    const meter = meterProvider.getMeter(LOCK_TELEMETRY.scope, version);
    const advice = { explicitBucketBoundaries: [...LOCK_DURATION_BUCKETS] };
    this.waitDuration = meter.createHistogram(metrics.waitDuration, { unit: 's', description: 'How long lock acquisitions waited, granted or not.', advice });
    this.holdDuration = meter.createHistogram(metrics.holdDuration, { unit: 's', description: 'How long locks were held, from the grant to the release or loss.', advice });
    this.losses = meter.createCounter(metrics.losses, { unit: '{loss}', description: 'Locks lost by their holder, by reason.' });
    this.extensions = meter.createCounter(metrics.extensions, { unit: '{extension}', description: 'Lease extensions of held locks.' });
    this.backgroundErrors = meter.createCounter(metrics.backgroundErrors, { unit: '{error}', description: 'Failures of background lock work that no caller awaits.' });
    // Counted here and read at collection: an acquisition then costs the SDK no call for its count.
    const acquisitions = meter.createObservableCounter(metrics.acquisitions, { unit: '{acquisition}', description: 'Lock acquisitions, by outcome.' });
    const waiters = meter.createObservableUpDownCounter(metrics.waiters, { unit: '{waiter}', description: 'Lock acquisitions waiting now.' });
    const held = meter.createObservableUpDownCounter(metrics.held, { unit: '{lock}', description: 'Locks held now.' });
    meter.addBatchObservableCallback(
      (result) => {
        // A collection (a Prometheus scrape, a periodic export) runs this before it reads the histograms:
        // the locks that ended since the last batch are in what it reads.
        this.flush();
        for (const state of this.managers.values()) {
          for (const mode of LANES) {
            for (const outcome of OUTCOMES) {
              const count = state.acquisitions[mode][outcome];
              if (count > 0) result.observe(acquisitions, count, state.byOutcome[mode][outcome]);
            }
          }
          result.observe(waiters, state.manager.waitingCount, state.strategy);
          result.observe(held, state.manager.heldCount, state.strategy);
        }
      },
      [acquisitions, waiters, held],
    );
    this.keyOf = keyAttribute(checked.key ?? 'hashed');
    this.keyInMessage = keyInText(checked.key ?? 'hashed');
  }

  attach(manager: ObservedLockManager): void {
    if (this.managers.has(manager)) return;
    const strategy: Attributes = { [names.strategy]: manager.name };
    const state: ManagerState = {
      manager,
      strategy,
      byOutcome: perMode((lane) => perOutcome((outcome) => ({ ...strategy, ...laneAttributes(lane), [names.outcome]: outcome }))),
      acquisitions: perMode(() => perOutcome(() => 0)),
      held: perMode((lane) => ({
        released: { ...strategy, ...laneAttributes(lane), [names.holdOutcome]: 'released' },
        lost: { ...strategy, ...laneAttributes(lane), [names.holdOutcome]: 'lost' },
      })),
      spanAttributes: perMode((lane) => ({ ...strategy, [names.backend]: manager.backendName, ...laneAttributes(lane) })),
      listeners: {
        extended: (event) => {
          this.extensions.add(1, strategy);
          this.holds.get(event.owner)?.extended(event.expiresAt);
        },
        lost: (event) => {
          this.losses.add(1, { ...strategy, [names.lostReason]: event.reason });
          this.holds.get(event.owner)?.lost(event.reason, event.heldMs);
        },
        backgroundError: (event) => this.backgroundErrors.add(1, { ...strategy, [names.operation]: event.operation, [names.errorType]: errorType(event.error) }),
      },
    };
    this.managers.set(manager, state);
    manager.events.on('extended', state.listeners.extended);
    manager.events.on('lost', state.listeners.lost);
    manager.events.on('backgroundError', state.listeners.backgroundError);
  }

  detach(manager: ObservedLockManager): void {
    const state = this.managers.get(manager);
    if (!state) return;
    this.flush();
    this.managers.delete(manager);
    manager.events.off('extended', state.listeners.extended);
    manager.events.off('lost', state.listeners.lost);
    manager.events.off('backgroundError', state.listeners.backgroundError);
  }

  acquisitionStarted(manager: ObservedLockManager, acquisition: ObservedAcquisition): AcquisitionObservation | undefined {
    const state = this.managers.get(manager);
    if (!state) return undefined;
    const lane: Lane = acquisition.permit ? 'permit' : acquisition.mode;
    return new ObservedLock(this, this.api, state, lane, acquisition.key, acquisition.permit, this.api.context.active(), acquisition.startedAt);
  }

  /**
   * Writes at once what is waiting to be written (spans of locks that ended, wait and hold times). Runs by
   * itself `OBSERVER_WRITE_DELAY_MS` after a lock ends, and when a manager is closed; call it before reading
   * an in-memory exporter in a test.
   */
  flush(): void {
    const pending = this.pending;
    if (pending.length === 0) return;
    this.pending = [];
    for (const lock of pending) {
      try {
        lock.flush();
      } catch {
        // Telemetry must never fail the application: a span that cannot be written is dropped.
      }
    }
  }

  /** @internal Schedules `lock` to be written with the others of the batch (see `OBSERVER_WRITE_DELAY_MS`). */
  later(lock: ObservedLock): void {
    this.pending.push(lock);
    // Unref'd: a batch never keeps the process alive (closing a manager writes what is left).
    if (this.pending.length === 1) setTimeout(this.flushLater, OBSERVER_WRITE_DELAY_MS).unref();
  }

  /** @internal */
  startSpan(attributes: Attributes, startTime: number, parent: OpenTelemetryApi.Context): OpenTelemetryApi.Span {
    return this.tracer.startSpan(spans.lock, { kind: this.api.SpanKind.INTERNAL, attributes, startTime }, parent);
  }

  /** @internal */
  keyAttribute(key: string): readonly [string, string] | undefined {
    return this.keyOf(key);
  }

  /** @internal An error message as a span may carry it: with the key written as the `key` option says. */
  statusMessage(error: unknown, key: string): string {
    return this.keyInMessage(error instanceof Error ? error.message : String(error), key);
  }

  /** @internal */
  recordWait(seconds: number, attributes: Attributes): void {
    this.waitDuration.record(seconds, attributes);
  }

  /** @internal */
  recordHold(seconds: number, attributes: Attributes): void {
    this.holdDuration.record(seconds, attributes);
  }

  /** @internal */
  holdStarted(owner: string, lock: ObservedLock): void {
    this.holds.set(owner, lock);
  }

  /** @internal */
  holdFinished(owner: string): void {
    this.holds.delete(owner);
  }
}
