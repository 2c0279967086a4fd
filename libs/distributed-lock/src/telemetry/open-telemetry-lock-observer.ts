import type { AcquisitionObservation, LockObserver, ObservedAcquisition, ObservedLockManager } from '../locking/lock-observer';
import type { OpenTelemetryLockObserverOptions } from './lock-telemetry-options';
import { OpenTelemetryRecorder } from './open-telemetry-recorder';

/**
 * Traces and metrics of locks through the OpenTelemetry API (`@opentelemetry/api`, an optional peer
 * dependency, loaded when the observer is created; your SDK decides where they go).
 *
 * - A `lock` span per acquisition, a child of the caller's active span: it covers the wait, and once the
 *   lock is granted (a `lock.granted` event) the hold, to the release or the loss. It carries the outcome,
 *   the fencing token and both durations; what a `withLock` / `@Locked` section traces nests under it.
 * - Histograms of wait and hold time (s); counters of acquisitions by outcome, losses by reason, extensions
 *   and background errors; waiters and held locks now.
 *
 * Names and attributes: `LOCK_TELEMETRY` and docs/observability.md. Give it to a `LockManager` as
 * `observer`; in Nest, `DistributedLockModule.forRoot({ telemetry: true })` does. One observer can serve
 * several managers.
 */
export class OpenTelemetryLockObserver implements LockObserver {
  // Untyped in the emitted declarations (private): the public API names no OpenTelemetry type.
  private readonly recorder: OpenTelemetryRecorder;

  /** Throws `MissingPeerDependencyError` when `@opentelemetry/api` is not installed, `InvalidLockOptionsError` for a bad option. */
  constructor(options: OpenTelemetryLockObserverOptions = {}) {
    this.recorder = new OpenTelemetryRecorder(options);
  }

  attach(manager: ObservedLockManager): void {
    this.recorder.attach(manager);
  }

  detach(manager: ObservedLockManager): void {
    this.recorder.detach(manager);
  }

  acquisitionStarted(manager: ObservedLockManager, acquisition: ObservedAcquisition): AcquisitionObservation | undefined {
    return this.recorder.acquisitionStarted(manager, acquisition);
  }

  /**
   * Writes at once what is waiting to be written (spans of locks that ended, wait and hold times). Runs by
   * itself a few milliseconds after a lock ends, and when a manager is closed; call it before reading an
   * in-memory exporter in a test.
   */
  flush(): void {
    this.recorder.flush();
  }
}
