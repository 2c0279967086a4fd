import { applyDecorators, SetMetadata } from '@nestjs/common';
import type { OptimisticRetryOptions } from '../../versioning/optimistic-retry';
import { OPTIMISTIC_VERSION_METADATA } from '../distributed-lock.constants';

/**
 * Re-runs the decorated provider method when it throws `VersionConflictError` (an optimistic update found
 * another version), up to `retries` times with jittered backoff, then rethrows. The method must re-read
 * the row on each run. With `@Locked` on the same method, each attempt takes the lock anew.
 */
export function OptimisticVersion(options: OptimisticRetryOptions = {}): MethodDecorator {
  return applyDecorators(SetMetadata(OPTIMISTIC_VERSION_METADATA, options));
}
