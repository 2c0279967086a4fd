import { randomUUID } from 'node:crypto';
import { LockManager, LockService, type LockManagerOptions } from '@app/distributed-lock';
import { setUpSubject, type ContractSubject } from './contract-subject';

/** The instances of an operator's contract suite (`query`, `queryPermits`, `breakLock`) on one subject. */
export interface OperatorSides {
  /** A key of its own for each test. */
  key(): string;
  /** A new instance: a strategy of its own (its own connections) under a manager and a service. */
  instance(options?: LockManagerOptions): Promise<LockService>;
  /** The instance that asks and breaks; it holds nothing. Set once the suite started. */
  readonly observer: LockService;
  /** The observer's manager (its events). */
  observerManager(): LockManager;
}

/**
 * Registers the suite's start (the subject's servers, the observer) and end (every instance closed), and
 * returns its instances. Call it inside the suite's `describe`.
 */
export function operatorSides(subject: ContractSubject, prefix: string): OperatorSides {
  const managers: LockManager[] = [];
  const run = randomUUID().slice(0, 8);
  let seq = 0;
  let tearDown: (() => Promise<void>) | undefined;
  let observer: LockService | undefined;
  const instance = async (options?: LockManagerOptions): Promise<LockService> => {
    const manager = new LockManager(await subject.create(), options);
    managers.push(manager);
    return new LockService(manager);
  };
  beforeAll(async () => {
    tearDown = await setUpSubject(subject);
    observer = await instance();
  });
  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    await tearDown?.();
  }, 30_000);
  return {
    key: () => `${prefix}:${run}:${(seq += 1)}`,
    instance,
    get observer(): LockService {
      if (!observer) throw new Error('the suite has not started: use the observer inside a test');
      return observer;
    },
    observerManager: () => managers[0],
  };
}
