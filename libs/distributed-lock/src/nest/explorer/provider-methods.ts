import type { DiscoveryService, MetadataScanner } from '@nestjs/core';

/** A provider or controller as `DiscoveryService` hands it out (Nest's `InstanceWrapper`, which its public entry does not export). */
export type DiscoveredWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** One method of a discovered provider or controller, as the explorers visit it. */
export interface ProviderMethod {
  /** The singleton instance, when there is one (undefined for request- or transient-scoped providers). */
  readonly instance: unknown;
  readonly methodName: string;
  /** The method as found on the class (a `@ScheduledLock` dispatcher, for such a method). */
  readonly method: object;
  /** `Class#method`, for messages. */
  readonly where: string;
}

/** Every method of a discovered provider's class (none for aliases). */
export function providerMethods(wrapper: DiscoveredWrapper, scanner: MetadataScanner): ProviderMethod[] {
  const prototype = wrapper.metatype && typeof wrapper.metatype === 'function' ? (wrapper.metatype as { prototype?: object }).prototype : undefined;
  const instance: unknown = wrapper.instance;
  const target = (instance && typeof instance === 'object' ? Object.getPrototypeOf(instance) : prototype) as object | undefined;
  if (!target || wrapper.isAlias) return [];
  const methods: ProviderMethod[] = [];
  for (const methodName of scanner.getAllMethodNames(target)) {
    const method = (target as Record<string, unknown>)[methodName];
    if (typeof method === 'function') methods.push({ instance, methodName, method, where: `${wrapper.name?.toString() ?? 'provider'}#${methodName}` });
  }
  return methods;
}
