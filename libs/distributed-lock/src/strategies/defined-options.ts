/**
 * `options` without the entries whose value is `undefined`. Spread over a strategy's defaults, an option the
 * user left unset (`retryStrategy: config.retry`, with no `retry` configured) keeps the default instead of
 * erasing it.
 */
export function definedOptions<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}
