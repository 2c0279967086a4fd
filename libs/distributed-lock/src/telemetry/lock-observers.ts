import type { AcquisitionObservation, HoldObservation, LockObserver, ObservedAcquisition, ObservedLockManager } from '../locking/lock-observer';

/** Several holds' observations as one: each is told, and a section runs under every one of them. */
function holdsTogether(holds: readonly HoldObservation[]): HoldObservation | undefined {
  if (holds.length <= 1) return holds[0];
  return {
    run: <T>(fn: () => T): T => {
      // The first observer's view outermost, each next one inside it, the section innermost.
      let section = fn;
      for (let i = holds.length - 1; i >= 0; i -= 1) {
        const hold = holds[i];
        if (!hold.run) continue;
        const inner = section;
        section = () => (hold.run ? hold.run(inner) : inner());
      }
      return section();
    },
    holdEnded: (heldMs) => {
      for (const hold of holds) hold.holdEnded(heldMs);
    },
  };
}

/**
 * Several observers behind one, to which more can be added while the managers run (the Nest module adds
 * NestJS Observe's once the application's providers exist). With a single observer it hands out that
 * observer's own observations, at no extra cost per acquisition.
 */
export class LockObservers implements LockObserver {
  private readonly observers: LockObserver[] = [];
  private readonly managers = new Set<ObservedLockManager>();

  constructor(observers: readonly LockObserver[] = []) {
    for (const observer of observers) this.add(observer);
  }

  /** How many observers report. */
  get size(): number {
    return this.observers.length;
  }

  /** Adds an observer, attached at once to every manager already observed. */
  add(observer: LockObserver): void {
    this.observers.push(observer);
    for (const manager of this.managers) observer.attach(manager);
  }

  attach(manager: ObservedLockManager): void {
    this.managers.add(manager);
    for (const observer of this.observers) observer.attach(manager);
  }

  detach(manager: ObservedLockManager): void {
    this.managers.delete(manager);
    for (const observer of this.observers) observer.detach(manager);
  }

  acquisitionStarted(manager: ObservedLockManager, acquisition: ObservedAcquisition): AcquisitionObservation | undefined {
    if (this.observers.length === 1) return this.observers[0].acquisitionStarted(manager, acquisition);
    const observations: AcquisitionObservation[] = [];
    for (const observer of this.observers) {
      const observation = observer.acquisitionStarted(manager, acquisition);
      if (observation) observations.push(observation);
    }
    if (observations.length <= 1) return observations[0];
    return {
      waitEnded: (outcome, waitedMs, grant, error) => {
        const holds: HoldObservation[] = [];
        for (const observation of observations) {
          const hold = observation.waitEnded(outcome, waitedMs, grant, error);
          if (hold) holds.push(hold);
        }
        return holdsTogether(holds);
      },
    };
  }
}
