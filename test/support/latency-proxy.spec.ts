import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { behindProxies, LatencyProxy } from './latency-proxy';

/** An echo server on loopback: what it gets, it sends back; on `bye` it answers and hangs up. */
async function echoServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    socket.on('data', (chunk: Buffer) => {
      socket.write(chunk);
      if (chunk.toString().endsWith('bye')) socket.end();
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends `text` and resolves what comes back (`length` characters), and how long that took in ms. */
function roundTrip(socket: Socket, text: string, length = text.length): Promise<{ echoed: string; ms: number }> {
  return new Promise((resolve) => {
    let echoed = '';
    const started = performance.now();
    const onData = (chunk: Buffer): void => {
      echoed += chunk.toString();
      if (echoed.length >= length) {
        socket.off('data', onData);
        resolve({ echoed, ms: performance.now() - started });
      }
    };
    socket.on('data', onData);
    socket.write(text);
  });
}

describe('LatencyProxy', () => {
  let echo: { server: Server; port: number };

  beforeAll(async () => {
    echo = await echoServer();
  });

  afterAll(async () => {
    await new Promise((resolve) => echo.server.close(resolve));
  });

  it('adds its delay in each direction, keeps the bytes in order, and passes a hang-up on after the last reply', async () => {
    const proxy = new LatencyProxy({ host: '127.0.0.1', port: echo.port }, 10);
    const port = await proxy.start();
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    try {
      const times: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        const { echoed, ms } = await roundTrip(socket, `ping-${i}`);
        expect(echoed).toBe(`ping-${i}`);
        times.push(ms);
      }
      // 10 ms each way: 20 ms of round trip at least, and not much more on an idle loopback.
      for (const ms of times) expect(ms).toBeGreaterThanOrEqual(19.5);
      expect(Math.min(...times)).toBeLessThan(40);
      // Chunks written one after the other arrive in order.
      const burst = Array.from({ length: 50 }, (_, i) => `<${i}>`).join('');
      socket.write(burst.slice(0, 60));
      const rest = roundTrip(socket, burst.slice(60), burst.length);
      expect((await rest).echoed).toBe(burst);
      // The server's last reply comes through before its hang-up.
      const closed = new Promise((resolve) => socket.once('end', resolve));
      expect((await roundTrip(socket, 'bye')).echoed).toBe('bye');
      await closed;
    } finally {
      socket.destroy();
      await proxy.close();
    }
  });

  it('puts a proxy in front of every address of a connection string, once per address', async () => {
    const proxies: LatencyProxy[] = [];
    try {
      const value = await behindProxies(`redis://127.0.0.1:${echo.port},redis://127.0.0.1:${echo.port},mysql://u:p@localhost:${echo.port}/db`, 0.5, proxies);
      expect(proxies).toHaveLength(2);
      expect(value).toBe(`redis://127.0.0.1:${proxies[0].port},redis://127.0.0.1:${proxies[0].port},mysql://u:p@127.0.0.1:${proxies[1].port}/db`);
      expect(proxies.map((proxy) => proxy.target)).toEqual([
        { host: '127.0.0.1', port: echo.port },
        { host: 'localhost', port: echo.port },
      ]);
    } finally {
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });
});
