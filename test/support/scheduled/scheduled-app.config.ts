/** Settings shared by the scheduled-jobs app process and the test that drives it. Durations in ms. */

/** The lease: a crashed instance's job runs again elsewhere after it. */
export const LOCK_AT_MOST_FOR = 3_000;
/**
 * Above the skew between instances (one runs 400 ms ahead) plus timer lateness, and as far below the 1 s
 * period: a lock taken late (a busy event loop, a slow server) must not outlast the next tick. 300 ms of
 * margin on each side.
 */
export const LOCK_AT_LEAST_FOR = 700;
