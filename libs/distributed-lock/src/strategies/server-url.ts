import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';

/**
 * Refuses a server address given as a URL string but written without its scheme ("localhost:36379"). The
 * docs and the errors speak of URLs, and the scheme is where TLS is asked for ("rediss://", "https://"):
 * an address without one says nothing about it, and `host:port` is the form of other backends' options
 * (memcached, ZooKeeper), so a string copied from one of those into a Redis or etcd option is most likely a
 * mistake. Checked before any client is made, with the address to write instead.
 */
export function assertServerUrl(address: string, path: string, schemes: readonly [string, string], what: string): void {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(address)) return;
  const [plain, tls] = schemes;
  throw new InvalidLockOptionsError(
    path,
    `expected ${what} URL (${plain}://host:port, or ${tls}://host:port for TLS), got "${address}", which has no scheme. ` +
      `Write "${plain}://${address}" (or "${tls}://${address}" if the server speaks TLS).`,
  );
}
