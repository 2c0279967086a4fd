import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { MissingPeerDependencyError } from '../../errors/missing-peer-dependency.error';
import { loadPeerDependency } from '../../strategies/load-peer-dependency';
import { LockRegistry } from '../lock-registry';
import { ObserveLockObserver, type ObserveTracer } from './observe-lock-observer';

type ObservePackage = typeof import('@nestjs/observe');

/**
 * Hands the locks to NestJS Observe when the module's `telemetry` is on and Observe's `TracerService` is
 * in the application (`@nestjs/observe` is loaded only then, on bootstrap). With `telemetry.observe: true`,
 * a missing package or module fails the bootstrap.
 */
@Injectable()
export class ObserveTelemetryBinder implements OnModuleInit {
  constructor(
    private readonly registry: LockRegistry,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    const telemetry = this.registry.telemetry;
    if (!telemetry || telemetry.observe === false) return;
    const tracer = this.findTracer(telemetry.observe === true);
    if (tracer) this.registry.addObserver(new ObserveLockObserver(tracer, { key: telemetry.key }));
  }

  private findTracer(required: boolean): ObserveTracer | undefined {
    let observe: ObservePackage;
    try {
      observe = loadPeerDependency<ObservePackage>('@nestjs/observe', 'telemetry.observe');
    } catch (error) {
      if (!required && error instanceof MissingPeerDependencyError) return undefined;
      throw error;
    }
    try {
      return this.moduleRef.get(observe.TracerService, { strict: false });
    } catch (error) {
      if (!required) return undefined;
      throw new InvalidLockOptionsError(
        'telemetry.observe',
        "NestJS Observe's TracerService is not in the application: import the ObserveModule of `createObserveModule()` with forRoot or forRootAsync, or leave `observe` unset.",
        { cause: error },
      );
    }
  }
}
