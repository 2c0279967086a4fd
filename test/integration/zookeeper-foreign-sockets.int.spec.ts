import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';

const run = randomUUID().slice(0, 8);
const listening = (server: Server | HttpServer): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));

/**
 * A ZooKeeper member that accepts a connection and never answers, as one does during a leader election:
 * the client's connection attempt times out there, and it moves on to the next member.
 */
function silentMember(): { server: Server; accepted: () => number; close: () => Promise<void> } {
  const held: Socket[] = [];
  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    held.push(socket);
  });
  const close = (): Promise<void> => {
    held.forEach((socket) => socket.destroy());
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return { server, accepted: () => held.length, close };
}

/**
 * The application's own sockets keep working while the ZooKeeper client fails over. The `zookeeper`
 * package's binding, after a connection attempt that timed out, could remove a socket number that Node had
 * meanwhile given to another socket from the event loop's epoll set: that socket was never read again (the
 * demo's flash sale saw one buyer's request get the HTTP server's 408 after 87 s). Here the application opens
 * sockets to its own HTTP server while the strategies' sessions connect through silent members, then sends a
 * request on each: every one must be answered.
 */
describe('ZooKeeper strategy: the application\'s other sockets through a failover', () => {
  const members = [silentMember(), silentMember(), silentMember()];
  const http = createHttpServer((request, response) => {
    request.resume();
    request.on('end', () => response.end('ok'));
  });
  http.keepAliveTimeout = 60_000;
  const managers: LockManager[] = [];
  const sockets: Socket[] = [];

  afterAll(async () => {
    sockets.forEach((socket) => socket.destroy());
    http.closeAllConnections();
    await Promise.all(managers.map((manager) => manager.close()));
    await new Promise((resolve) => http.close(resolve));
    await Promise.all(members.map((member) => member.close()));
  }, 30_000);

  it('answers every request on a socket opened while sessions connected through members that did not answer', async () => {
    const httpPort = await listening(http);
    const silentPorts = await Promise.all(members.map((member) => listening(member.server)));
    const connectString = [...silentPorts.map((port) => `127.0.0.1:${port}`), process.env.LOCK_TEST_ZOOKEEPER as string].join(',');
    // A socket every 2 ms for as long as the sessions take to connect: some take the numbers the client frees.
    const opener = setInterval(() => {
      const socket = connect(httpPort, '127.0.0.1');
      socket.on('error', () => undefined);
      sockets.push(socket);
    }, 2);
    try {
      // The client tries the members in a random order: sessions open until some went through a silent one.
      for (let session = 0; session < 8 && members.reduce((sum, member) => sum + member.accepted(), 0) < 3; session++) {
        const manager = new LockManager(new ZooKeeperLockStrategy({ connect: connectString, sessionTimeout: 4_000, connectTimeout: 15_000, name: `foreign-sockets-${session}` }), { operationTimeout: 15_000 });
        managers.push(manager);
        await (await new LockService(manager).acquire(`foreign-sockets:${run}`, { waitTimeout: 15_000 })).release();
      }
    } finally {
      clearInterval(opener);
    }
    expect(members.reduce((sum, member) => sum + member.accepted(), 0)).toBeGreaterThanOrEqual(1);
    const answers = await Promise.all(
      sockets.map(
        (socket) =>
          new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(false), 5_000);
            socket.once('data', () => {
              clearTimeout(timer);
              resolve(true);
            });
            socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
          }),
      ),
    );
    expect(sockets.length).toBeGreaterThan(100);
    expect(answers.filter((answered) => !answered).length).toBe(0);
  }, 120_000);
});
