/**
 * Copies every reflect-metadata key and the name of `original` onto `wrapper`, so that other decorators'
 * metadata (route handlers, guards, `@Cron`, our own) still reads the same from the wrapped method.
 */
export function copyMethodMetadata(original: object, wrapper: object): void {
  for (const key of Reflect.getMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getMetadata(key, original), wrapper);
  }
  Object.defineProperty(wrapper, 'name', { value: (original as { name?: string }).name, configurable: true });
}
