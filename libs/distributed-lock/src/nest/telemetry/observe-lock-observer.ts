import type { Counter, Gauge, Summary, TraceSpanDelegate, TracerService } from '@nestjs/observe';
import type { LockEventMap } from '../../locking/lock-events';
import type { AcquisitionObservation, HoldObservation, LockObserver, ObservedAcquisition, ObservedLockManager } from '../../locking/lock-observer';
import { keyAttribute } from '../../telemetry/key-attribute';
import { LOCK_TELEMETRY } from '../../telemetry/lock-telemetry-names';
import type { LockKeyAttribute } from '../../telemetry/lock-telemetry-options';

/** What the adapter uses of NestJS Observe's `TracerService`. */
export type ObserveTracer = Pick<TracerService, 'createSpan' | 'currentTraceId' | 'counter' | 'gauge' | 'summary'>;

type Tags = Record<string, string | number | boolean>;

const { spans, events, metrics, attributes: names } = LOCK_TELEMETRY;

/** A span of Observe's, kept open until `end` (Observe's spans wrap a callback: this one waits for `end`). */
interface OpenSpan {
  tag(key: string, value: string | number | boolean): void;
  /** Ends the span; with an error, as failed. */
  end(error?: unknown): void;
}

function errorType(error: unknown): string {
  return error instanceof Error ? error.constructor.name : typeof error;
}

/**
 * The locks as spans of NestJS Observe (`@nestjs/observe`), inside the request or job trace it records,
 * and their counts and durations as its custom metrics: the same names as the OpenTelemetry observer
 * (see `LOCK_TELEMETRY`). A `lock` span covers the wait and the hold, with both durations as tags.
 * Outside a traced operation only the metrics are kept. Observe's spans nest by callback, so a section's
 * own spans sit beside the `lock` span, not under it.
 */
export class ObserveLockObserver implements LockObserver {
  private readonly keyOf: (key: string) => readonly [string, string] | undefined;
  private readonly strategies: string[] = [];
  private readonly acquisitions: Counter<string>;
  private readonly losses: Counter<string>;
  private readonly extensions: Counter<string>;
  private readonly backgroundErrors: Counter<string>;
  private readonly waiters: Gauge<string>;
  private readonly held: Gauge<string>;
  private waitDuration: Summary<string> | undefined;
  private holdDuration: Summary<string> | undefined;
  private readonly listeners = new Map<
    ObservedLockManager,
    { extended: (...args: LockEventMap['extended']) => void; lost: (...args: LockEventMap['lost']) => void; backgroundError: (...args: LockEventMap['backgroundError']) => void }
  >();
  /** Held locks, by owner id, with their span when they were taken inside a trace. */
  private readonly holds = new Map<string, { readonly span: OpenSpan | undefined }>();

  constructor(
    private readonly tracer: ObserveTracer,
    options: { readonly key?: LockKeyAttribute } = {},
  ) {
    this.keyOf = keyAttribute(options.key ?? 'hashed');
    this.acquisitions = tracer.counter(metrics.acquisitions, { description: 'Lock acquisitions, by outcome.', labels: [names.strategy, names.mode, names.outcome] });
    this.losses = tracer.counter(metrics.losses, { description: 'Locks lost by their holder, by reason.', labels: [names.strategy, names.lostReason] });
    this.extensions = tracer.counter(metrics.extensions, { description: 'Lease extensions of held locks.', labels: [names.strategy] });
    this.backgroundErrors = tracer.counter(metrics.backgroundErrors, { description: 'Failures of background lock work that no caller awaits.', labels: [names.strategy, names.operation, names.errorType] });
    this.waiters = tracer.gauge(metrics.waiters, { description: 'Lock acquisitions waiting now.', labels: [names.strategy], kind: 'additive' });
    this.held = tracer.gauge(metrics.held, { description: 'Locks held now.', labels: [names.strategy], kind: 'additive' });
  }

  attach(manager: ObservedLockManager): void {
    if (this.listeners.has(manager)) return;
    if (!this.strategies.includes(manager.name)) {
      this.strategies.push(manager.name);
      // An Observe summary is split by one label, declared up front: here, the strategy.
      this.waitDuration = this.tracer.summary(metrics.waitDuration, { description: 'How long lock acquisitions waited, granted or not (s).', labels: [...this.strategies] });
      this.holdDuration = this.tracer.summary(metrics.holdDuration, { description: 'How long locks were held (s).', labels: [...this.strategies] });
    }
    const strategy = { [names.strategy]: manager.name };
    const listeners = {
      extended: (event: LockEventMap['extended'][0]) => {
        this.extensions.increment(strategy);
        this.holds.get(event.owner)?.span?.tag(events.extended, event.expiresAt);
      },
      lost: (event: LockEventMap['lost'][0]) => {
        this.losses.increment({ ...strategy, [names.lostReason]: event.reason });
        const hold = this.holds.get(event.owner);
        if (!hold) return;
        this.holds.delete(event.owner);
        this.holdDuration?.observe(event.heldMs / 1000, manager.name);
        this.held.decrement(strategy);
        hold.span?.tag(names.holdOutcome, 'lost');
        hold.span?.tag(names.holdDuration, event.heldMs / 1000);
        hold.span?.tag(names.lostReason, event.reason);
        hold.span?.end(new Error(`lock lost: ${event.reason}`));
      },
      backgroundError: (event: LockEventMap['backgroundError'][0]) =>
        this.backgroundErrors.increment({ ...strategy, [names.operation]: event.operation, [names.errorType]: errorType(event.error) }),
    };
    this.listeners.set(manager, listeners);
    manager.events.on('extended', listeners.extended);
    manager.events.on('lost', listeners.lost);
    manager.events.on('backgroundError', listeners.backgroundError);
  }

  detach(manager: ObservedLockManager): void {
    const listeners = this.listeners.get(manager);
    if (!listeners) return;
    this.listeners.delete(manager);
    manager.events.off('extended', listeners.extended);
    manager.events.off('lost', listeners.lost);
    manager.events.off('backgroundError', listeners.backgroundError);
  }

  acquisitionStarted(manager: ObservedLockManager, acquisition: ObservedAcquisition): AcquisitionObservation | undefined {
    if (!this.listeners.has(manager)) return undefined;
    const strategy = { [names.strategy]: manager.name };
    // One span from the call to the failure, or to the release or loss of the lock it got.
    const span = this.openSpan(spans.lock, this.tags(manager, acquisition));
    this.waiters.increment(strategy);
    return {
      waitEnded: (outcome, waitedMs, grant, error) => {
        this.waiters.decrement(strategy);
        this.acquisitions.increment({ ...strategy, [names.mode]: acquisition.mode, ...(acquisition.permit ? { [names.kind]: 'permit' } : {}), [names.outcome]: outcome });
        this.waitDuration?.observe(waitedMs / 1000, manager.name);
        span?.tag(names.outcome, outcome);
        span?.tag(names.waitDuration, waitedMs / 1000);
        if (!grant) {
          if (error !== undefined) span?.tag(names.errorType, errorType(error));
          span?.end(error);
          return undefined;
        }
        if (grant.fencingToken !== undefined) span?.tag(names.fencingToken, grant.fencingToken);
        return this.holdStarted(manager, grant.owner, span);
      },
    };
  }

  private holdStarted(manager: ObservedLockManager, owner: string, span: OpenSpan | undefined): HoldObservation {
    const strategy = { [names.strategy]: manager.name };
    this.held.increment(strategy);
    const hold = { span };
    this.holds.set(owner, hold);
    return {
      holdEnded: (heldMs) => {
        // Not there any more: a loss has ended it already (see the `lost` listener).
        if (this.holds.get(owner) !== hold) return;
        this.holds.delete(owner);
        this.held.decrement(strategy);
        this.holdDuration?.observe(heldMs / 1000, manager.name);
        span?.tag(names.holdOutcome, 'released');
        span?.tag(names.holdDuration, heldMs / 1000);
        span?.end();
      },
    };
  }

  private tags(manager: ObservedLockManager, acquisition: ObservedAcquisition): Tags {
    const tags: Tags = { [names.strategy]: manager.name, [names.backend]: manager.backendName, [names.mode]: acquisition.mode };
    if (acquisition.permit) {
      tags[names.kind] = 'permit';
      tags[names.permits] = acquisition.permit.permits;
      tags[names.weight] = acquisition.permit.weight;
    }
    const key = this.keyOf(acquisition.key);
    if (key) tags[key[0]] = key[1];
    return tags;
  }

  /** A span in the running Observe trace, open until `end`; undefined outside a traced operation. */
  private openSpan(name: string, tags: Tags): OpenSpan | undefined {
    if (this.tracer.currentTraceId() === null) return undefined;
    let settle: (error?: unknown) => void = () => undefined;
    const settled = new Promise<void>((resolve, reject) => {
      settle = (error) => (error === undefined ? resolve() : reject(error instanceof Error ? error : new Error(String(error))));
    });
    let delegate: TraceSpanDelegate | undefined;
    // Observe ends the span when the callback's promise settles, and rethrows its rejection: that
    // rejection is the lock's own outcome, already given to the caller, so it is dropped here.
    this.tracer
      .createSpan(name, (span) => {
        delegate = span.addTags(tags);
        return settled;
      })
      .then(undefined, () => undefined);
    return {
      tag: (key, value) => void delegate?.setTag(key, value),
      end: settle,
    };
  }
}
