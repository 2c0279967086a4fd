import { createConnection, createServer } from 'node:net';

/**
 * Connects to 127.0.0.1:`port`, optionally sends `payload`, and collects what the server says until it
 * closes, `until` matches, or `timeoutMs` passes. Always bounded: ZooKeeper's four-letter words can
 * hang forever during start-up. Resolves null when the connection fails.
 */
export function probe(port: number, payload: string | Buffer | undefined, timeoutMs: number, until?: RegExp): Promise<string | null> {
  return new Promise((resolve) => {
    let data = '';
    let done = false;
    const socket = createConnection({ host: '127.0.0.1', port });
    const finish = (value: string | null): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => finish(data.length > 0 ? data : null), timeoutMs);
    socket.on('connect', () => {
      if (payload !== undefined) socket.write(payload);
    });
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
      if (until?.test(data)) finish(data);
    });
    socket.on('end', () => finish(data));
    socket.on('error', () => finish(null));
  });
}

/** True when nothing listens on 127.0.0.1:`port`. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Polls `check` every `intervalMs` until it is true or `timeoutMs` passes. */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} was not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A small HTTP request to 127.0.0.1 with a hard timeout; resolves the body or null. */
export async function httpRequest(port: number, path: string, body?: string, timeoutMs = 2_000): Promise<string | null> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      body,
      signal: controller.signal,
    });
    return await response.text();
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
