/** One lock implementation as the benchmark drives it: ours, a peer library, or a raw floor. */
export interface BenchLock {
  /** Waits for the lock (up to `waitMs`) and resolves its release function; rejects on failure. */
  acquire(key: string, waitMs: number): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export type Backend = 'memory' | 'redis' | 'redis5' | 'mysql' | 'sqlite' | 'zookeeper' | 'etcd';

export interface BenchSubject {
  /** Unique among subjects (a peer package runs on several backends). */
  readonly id: string;
  /** Ours: the strategy name; a peer: its package name; a floor: `floor:<what>`. */
  readonly subject: string;
  readonly ours: boolean;
  readonly backend: Backend;
  /** One-line description of the settings used. */
  readonly settings: string;
  /** For our subjects: the floor subject that measures the same server operations (ratios are taken to it). */
  readonly floor?: string;
  /**
   * For our subjects whose floor (as issue 9 sets it) does less on the server than the strategy: a floor
   * that sends the strategy's own server operations raw. Ours against it is what the library's code adds;
   * it against `floor`, what the strategy's protocol costs on the server.
   */
  readonly protocolFloor?: string;
  /** Measured in the uncontended case only (a floor that exists to split the uncontended gap). */
  readonly uncontendedOnly?: boolean;
  /** False for in-process locks, which cannot run the multi-process case. */
  readonly crossProcess: boolean;
  create(): Promise<BenchLock>;
}
