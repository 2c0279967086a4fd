import { Module } from '@nestjs/common';

/** Holder of one `forFeature` registration: a strategy, a prefix and the `LockService` built from them. */
@Module({})
export class DistributedLockFeatureModule {}
