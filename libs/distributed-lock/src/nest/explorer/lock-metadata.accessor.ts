import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { OptimisticRetryOptions } from '../../versioning/optimistic-retry';
import { LOCKED_METADATA, OPTIMISTIC_VERSION_METADATA } from '../distributed-lock.constants';
import type { LockedMetadata } from '../decorators/locked.decorator';

/** Every read of this library's method metadata, in one place. */
@Injectable()
export class LockMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  locked(method: object): LockedMetadata | undefined {
    return this.reflector.get<LockedMetadata | undefined>(LOCKED_METADATA, method as () => unknown);
  }

  optimisticVersion(method: object): OptimisticRetryOptions | undefined {
    return this.reflector.get<OptimisticRetryOptions | undefined>(OPTIMISTIC_VERSION_METADATA, method as () => unknown);
  }
}
