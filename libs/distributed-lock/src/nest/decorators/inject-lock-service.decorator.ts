import { Inject } from '@nestjs/common';
import { getLockServiceToken } from '../distributed-lock.tokens';

/**
 * Injects the `LockService` of a named strategy (registered in `forRoot` and imported with
 * `forFeature({ strategy })`). Without a name, the module's default `LockService`.
 */
export function InjectLockService(strategy?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getLockServiceToken(strategy));
}
