/** One lock implementation as the benchmark drives it: ours, a peer library, or a raw floor. */
export interface BenchLock {
  /** Waits for the lock (up to `waitMs`) and resolves its release function; rejects on failure. */
  acquire(key: string, waitMs: number): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export type Backend = 'memory' | 'redis' | 'redis5' | 'mysql' | 'postgres' | 'sqlite' | 'zookeeper' | 'etcd' | 'memcached';

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
   * For our subjects whose floor (the bare server operations of a lock) does less on the server than the strategy: a floor
   * that sends the strategy's own server operations raw. Ours against it is what the library's code adds;
   * it against `floor`, what the strategy's protocol costs on the server.
   */
  readonly protocolFloor?: string;
  /**
   * For our subjects that are another of ours plus one option (telemetry): that subject's id. The report
   * gives this one's throughput as a ratio to it, case by case: what the option costs.
   */
  readonly baseline?: string;
  /** Measured in the uncontended case only (a floor that exists to split the uncontended gap). */
  readonly uncontendedOnly?: boolean;
  /** False for in-process locks, which cannot run the multi-process case. */
  readonly crossProcess: boolean;
  /**
   * For a counting semaphore: how many may hold at once (the gauge counts a violation only above it).
   * Rows of semaphores are compared only with rows of the same size. Default 1 (a lock).
   */
  readonly permits?: number;
  create(): Promise<BenchLock>;
}

/**
 * How the contenders are deployed. `shared`: workers of one process share one lock client (one app
 * instance, many requests). `instances`: every contender is its own lock client with its own
 * connections (one app instance each), in one process or spread over several. `flash-sale`: several
 * processes, each one app instance whose concurrent requests share its client, each holding the lock
 * for a short piece of work.
 */
export type BenchShape = 'shared' | 'instances' | 'flash-sale';

/** What one contender does: which client it locks through, and how long it holds the lock. */
export interface ContendLayout {
  /** The lock client of worker `w` (the same one for every worker when shared). */
  readonly lockOf: (w: number) => BenchLock;
  /** Work inside the critical section, in ms (0: the minimal section). */
  readonly holdMs: number;
}
