/**
 * The names of the library's spans, metrics and attributes, in OpenTelemetry's semantic-convention style
 * (dotted, lower case, units in UCUM, durations in seconds). Listed in docs/observability.md.
 */
export const LOCK_TELEMETRY = Object.freeze({
  /** Instrumentation scope of the tracer and the meter. */
  scope: 'nest-distributed-lock',
  spans: Object.freeze({
    /**
     * One acquisition: from the call to the failure, or to the release or loss of the lock it got. The
     * grant is an event on it (`lock.granted`), so it reads as the wait, then the hold.
     */
    lock: 'lock',
    /**
     * One fire of a `@ScheduledLock` job, run or skipped: the root of a trace of its own, whatever was active
     * when the scheduler fired. Its `lock` span and what the job traces are its children.
     */
    scheduledRun: 'lock.scheduled_run',
    /**
     * One campaign of a leader election: a wait in line for the leadership and, once won, the whole term, to
     * its end. The root of a trace of its own; the `lock` span of the wait and what the leadership hooks
     * trace are its children.
     */
    election: 'lock.election',
  }),
  /** Events on the `lock` span. */
  events: Object.freeze({
    /** The lock was granted: the wait ends, the hold begins. */
    granted: 'lock.granted',
    /** The lease was extended (`lock.expires_at`). */
    extended: 'lock.extended',
    /** The lock was lost (`lock.lost.reason`). */
    lost: 'lock.lost',
  }),
  metrics: Object.freeze({
    /** Histogram, s: how long acquisitions waited, by strategy, mode and outcome. */
    waitDuration: 'lock.wait.duration',
    /** Histogram, s: how long locks were held, by strategy, mode and hold outcome. */
    holdDuration: 'lock.hold.duration',
    /** Counter, {acquisition}: acquisitions by strategy, mode and outcome. */
    acquisitions: 'lock.acquisitions',
    /** Counter, {loss}: lost locks by strategy and reason. */
    losses: 'lock.losses',
    /** Counter, {extension}: lease extensions (the watchdog's and `extend()`), by strategy. */
    extensions: 'lock.extensions',
    /** Counter, {error}: failures of background work no caller awaits, by strategy, operation and error type. */
    backgroundErrors: 'lock.background_errors',
    /** UpDownCounter (observed), {waiter}: acquisitions waiting now, by strategy. */
    waiters: 'lock.waiters',
    /** UpDownCounter (observed), {lock}: locks held now, by strategy. */
    held: 'lock.held',
  }),
  attributes: Object.freeze({
    /** The strategy's name: in a Nest module, the name it is registered under. */
    strategy: 'lock.strategy',
    /** The strategy's kind: "redis", "database", "zookeeper", … (spans only). */
    backend: 'lock.backend',
    /** The key, prefix included, when `key` is "plain" or a function (spans only). */
    key: 'lock.key',
    /** The first 16 hex digits of the key's SHA-256, when `key` is "hashed" (spans only). */
    keyHash: 'lock.key.hash',
    /** "exclusive" or "shared" ("shared" for a semaphore's permit). */
    mode: 'lock.mode',
    /** "permit" on the spans and metrics of a semaphore's permits; absent on those of locks. */
    kind: 'lock.kind',
    /** The semaphore's size, on a permit's span. */
    permits: 'lock.permits',
    /** How many of its places the permit takes, on a permit's span. */
    weight: 'lock.weight',
    /** How an acquisition ended: "acquired", "timeout", "aborted" or "error". */
    outcome: 'lock.outcome',
    /** How a hold ended: "released" or "lost". */
    holdOutcome: 'lock.hold.outcome',
    /** The fencing token of the grant, where the strategy has fencing (spans only). */
    fencingToken: 'lock.fencing_token',
    /** Why a lock was lost: a `LockLostReason` ("expired", "extension-refused", "session-ended", …). */
    lostReason: 'lock.lost.reason',
    /** The background operation that failed: "extend", "release" or "acquire". */
    operation: 'lock.operation',
    /** When the extended lease ends, in ms since the epoch (on the `lock.extended` event). */
    expiresAt: 'lock.expires_at',
    /** How long the acquisition waited, in s (on the span and its `lock.granted` event). */
    waitDuration: 'lock.wait.duration',
    /** How long the lock was held, in s (on the span, once released or lost). */
    holdDuration: 'lock.hold.duration',
    /** The error's class name, on failed acquisitions and background errors (OpenTelemetry's general attribute). */
    errorType: 'error.type',
    /** The scheduled job's name (`Class.method`, or its `name` option), on `lock.scheduled_run`. */
    job: 'lock.job',
    /** What became of a scheduled fire: "ran", "skipped" or "failed" (on `lock.scheduled_run`). */
    runOutcome: 'lock.run.outcome',
    /** The election's name, on `lock.election`. */
    election: 'lock.election.name',
    /**
     * How a campaign ended (on `lock.election`): "led" (a term, to its end), "timeout" (a round in line ended:
     * the next campaign lines up again), "stopped" (resigned or closed while in line) or "error".
     */
    electionOutcome: 'lock.election.outcome',
    /** The term's fencing token, where the strategy has fencing (on `lock.election`, outcome "led"). */
    term: 'lock.election.term',
    /** Why the term ended: a `LeadershipLostReason` ("lock-lost", "resigned", "closed"), on `lock.election`. */
    termEndReason: 'lock.election.end_reason',
  }),
});

/**
 * Bucket bounds of the duration histograms, in seconds: from 0.1 ms (an uncontended lock in the process)
 * to 30 s (a long queue), about 2.5× apart.
 */
export const LOCK_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
]);
