import { Module } from '@nestjs/common';

/** The route of one registration of the endpoints (a provider only so that registrations differ). */
export const LOCK_OPERATIONS_ROUTE = Symbol('LOCK_OPERATIONS_ROUTE');

/** Holds the operator's endpoints that `DistributedLockModule.operations` mounts; it provides nothing itself. */
@Module({})
export class DistributedLockOperationsModule {}
