import { ConfigurableModuleBuilder, type Provider } from '@nestjs/common';
import type { DistributedLockModuleOptions } from './distributed-lock-options.interface';

/** Extra fields of `forRoot` / `forRootAsync` beyond the options themselves. */
export interface DistributedLockModuleExtras {
  /** Providers added to the module, e.g. a client that the async factory injects. */
  readonly extraProviders?: Provider[];
}

export const {
  ConfigurableModuleClass: ConfigurableDistributedLockModule,
  MODULE_OPTIONS_TOKEN: DISTRIBUTED_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: DISTRIBUTED_LOCK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DISTRIBUTED_LOCK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DistributedLockModuleOptions>({ moduleName: 'DistributedLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDistributedLockOptions')
  .setExtras<DistributedLockModuleExtras>({ extraProviders: [] }, (definition, extras) => ({
    ...definition,
    providers: [...(definition.providers ?? []), ...(extras.extraProviders ?? [])],
  }))
  .build();
