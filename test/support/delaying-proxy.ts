import { createServer, connect, type AddressInfo, type Server } from 'node:net';

/**
 * A TCP proxy in front of the server of `target` (a database URL) that holds back, for `delayMs`, what the
 * client sends that contains `marker` (and everything after it on that connection): a statement that
 * reaches the server late. Resolves the URL to connect through, the proxy to close, and when (`Date.now()`)
 * each chunk containing the marker reached the proxy (with `delayMs` 0, a proxy that only notes them).
 */
export async function delayingProxy(target: string, marker: string, delayMs: number): Promise<{ url: string; server: Server; seen: number[] }> {
  const to = new URL(target);
  const seen: number[] = [];
  const server = createServer((client) => {
    const upstream = connect(Number(to.port), to.hostname);
    let queue = Promise.resolve();
    client.on('data', (chunk) => {
      const late = chunk.includes(marker);
      if (late) seen.push(Date.now());
      queue = queue.then(() => (late ? new Promise((resolve) => setTimeout(resolve, delayMs)) : undefined)).then(() => void upstream.write(chunk));
    });
    upstream.on('data', (chunk) => client.write(chunk));
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as AddressInfo).port);
  return { url: proxied.toString(), server, seen };
}
