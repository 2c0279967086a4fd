/** A server address the services tool put in the environment before the benchmark started. */
export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; the benchmark starts its servers with the services tool`);
  return value;
}

/** The five Redis masters of the Redlock cases. */
export const redisUrls = (): string[] => env('LOCK_TEST_REDIS_URLS').split(',');
