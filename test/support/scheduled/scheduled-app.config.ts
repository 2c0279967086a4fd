/** Settings shared by the scheduled-jobs app process and the test that drives it. Durations in ms. */

/** The lease: a crashed instance's job runs again elsewhere after it. */
export const LOCK_AT_MOST_FOR = 3_000;
/** Above the skew and timer lateness between instances (one runs 400 ms ahead), below the 1 s period. */
export const LOCK_AT_LEAST_FOR = 900;
