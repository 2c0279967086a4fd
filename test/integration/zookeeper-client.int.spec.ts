import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { NzkModule } from '@app/distributed-lock/strategies/zookeeper/node-zookeeper-client.type';
import { zkErrorCode } from '@app/distributed-lock/strategies/zookeeper/zookeeper-client.type';
import { ZooKeeperClient } from '@app/distributed-lock/strategies/zookeeper/zookeeper-client';
import { HeldBackProxy } from '../support/held-back-proxy';

// What the strategy's client adds to node-zookeeper-client, against the real server behind a proxy that can
// hold back what the server sends (a server that stops answering, as a frozen or partitioned one does).

// eslint-disable-next-line @typescript-eslint/no-require-imports
const zk = require('node-zookeeper-client') as NzkModule;
const SESSION_TIMEOUT_MS = 4_000;
const [host, port] = (process.env.LOCK_TEST_ZOOKEEPER as string).split(',')[0].split(':');

const clients: ZooKeeperClient[] = [];
const proxies: HeldBackProxy[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});

async function throughProxy(): Promise<{ client: ZooKeeperClient; proxy: HeldBackProxy }> {
  const proxy = new HeldBackProxy({ host, port: Number(port) });
  proxies.push(proxy);
  const client = new ZooKeeperClient(zk, { connect: `127.0.0.1:${await proxy.start()}`, timeout: SESSION_TIMEOUT_MS });
  clients.push(client);
  const connected = once(client, 'connect');
  client.init();
  await connected;
  return { client, proxy };
}

describe('ZooKeeper client: a server that stops answering', () => {
  it('drops the connection after two thirds of the session timeout and says so, then resumes the session', async () => {
    const { client, proxy } = await throughProxy();
    await client.exists('/');
    proxy.holdBack();
    const silentSince = Date.now();
    await once(client, 'connecting');
    const noticedAfter = Date.now() - silentSince;
    // Two thirds of 4 s, checked every 100 ms; the package pings every third, so it is never sooner.
    expect(noticedAfter).toBeGreaterThanOrEqual((SESSION_TIMEOUT_MS * 2) / 3 - 50);
    expect(noticedAfter).toBeLessThan(SESSION_TIMEOUT_MS);
    proxy.letThrough();
    await once(client, 'connect'); // the same session: its server still had it
    expect(await client.exists('/')).toMatchObject({ version: expect.any(Number) });
  }, 20_000);

  it('fails a call made while cut off with SESSION_EXPIRED once the server says the session expired, instead of leaving it unanswered', async () => {
    const { client, proxy } = await throughProxy();
    const ended = once(client, 'close');
    const proxyPort = proxy.port;
    await proxy.close(); // cut off: nothing reaches the server, which expires the session after its timeout
    await once(client, 'connecting');
    const call = client.exists('/').catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, SESSION_TIMEOUT_MS + 1_500));
    const back = new HeldBackProxy({ host, port: Number(port) });
    proxies.push(back);
    await back.start(proxyPort);
    // The client reconnects, hears that its session expired, and fails the call it kept.
    expect(zkErrorCode(await call)).toBe(-112);
    await ended;
    expect(zkErrorCode(await client.exists('/').catch((error: unknown) => error))).toBe(-112);
  }, 30_000);
});

describe('ZooKeeper client: replies it cannot read whole', () => {
  it('drops a connection cut in the middle of a reply, and reconnects without what was left of it', async () => {
    const proxy = new CuttingProxy({ host, port: Number(port) });
    const proxyPort = await proxy.start();
    try {
      const client = new ZooKeeperClient(zk, { connect: `127.0.0.1:${proxyPort}`, timeout: SESSION_TIMEOUT_MS });
      clients.push(client);
      const connected = once(client, 'connect');
      client.init();
      await connected;
      proxy.cutNextReplyAfter(3);
      const reconnected = once(client, 'connect');
      // The reply's first 3 bytes arrive, then the connection closes: the call fails with it.
      expect(zkErrorCode(await client.exists('/').catch((error: unknown) => error))).toBe(-4);
      await reconnected; // the same session, on a new connection, read from its first byte
      expect(await client.exists('/')).toMatchObject({ version: expect.any(Number) });
    } finally {
      await proxy.close();
    }
  }, 20_000);

  it('passes over a member whose answer cannot be parsed, and keeps trying the others', async () => {
    let accepted = 0;
    const sockets: Socket[] = [];
    const garbage: Server = createServer((socket) => {
      accepted += 1;
      sockets.push(socket);
      socket.on('error', () => undefined);
      // A whole frame of one byte: far too short for the handshake's answer.
      socket.end(Buffer.from([0, 0, 0, 1, 7]));
    });
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    try {
      const client = new ZooKeeperClient(zk, { connect: `127.0.0.1:${(garbage.address() as { port: number }).port},${host}:${port}`, timeout: SESSION_TIMEOUT_MS });
      clients.push(client);
      const connected = once(client, 'connect');
      client.init();
      await connected;
      expect(await client.exists('/')).toMatchObject({ version: expect.any(Number) });
      // And alone, it is tried again and again (the process lives on).
      const alone = new ZooKeeperClient(zk, { connect: `127.0.0.1:${(garbage.address() as { port: number }).port}`, timeout: SESSION_TIMEOUT_MS });
      clients.push(alone);
      const before = accepted;
      alone.init();
      await vi.waitFor(() => expect(accepted).toBeGreaterThanOrEqual(before + 2), { timeout: 5_000 });
      alone.close();
    } finally {
      sockets.forEach((socket) => socket.destroy());
      await new Promise((resolve) => garbage.close(resolve));
    }
  }, 20_000);
});

describe('ZooKeeper client: an answer the package does not know', () => {
  it('fails the call, instead of leaving it unanswered, when a server answers with an error code of a newer ZooKeeper', async () => {
    // A member that opens sessions and answers every request with SESSIONMOVED (-118), which the package's
    // table of codes does not have: it throws on it, after taking the call off its queue.
    const sockets: Socket[] = [];
    const newer: Server = createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
      let handshaken = false;
      let pending = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
          const frame = pending.subarray(4, 4 + pending.readInt32BE(0));
          pending = pending.subarray(4 + frame.length);
          if (!handshaken) {
            handshaken = true;
            // protocolVersion, timeOut, sessionId, passwd (16 bytes, length first)
            const answer = Buffer.alloc(4 + 4 + 8 + 4 + 16);
            answer.writeInt32BE(SESSION_TIMEOUT_MS, 4);
            answer.writeBigInt64BE(1n, 8);
            answer.writeInt32BE(16, 16);
            socket.write(Buffer.concat([lengthOf(answer), answer]));
            continue;
          }
          const xid = frame.readInt32BE(0);
          if (xid < 0) continue; // a ping or the credentials: nothing to say
          const reply = Buffer.alloc(4 + 8 + 4);
          reply.writeInt32BE(xid, 0);
          reply.writeInt32BE(-118, 12);
          socket.write(Buffer.concat([lengthOf(reply), reply]));
        }
      });
    });
    await new Promise<void>((resolve) => newer.listen(0, '127.0.0.1', resolve));
    try {
      const client = new ZooKeeperClient(zk, { connect: `127.0.0.1:${(newer.address() as { port: number }).port}`, timeout: SESSION_TIMEOUT_MS });
      clients.push(client);
      const connected = once(client, 'connect');
      client.init();
      await connected;
      const failure = await Promise.race([client.exists('/').catch((error: unknown) => error), new Promise((resolve) => setTimeout(() => resolve('unanswered'), 3_000))]);
      expect(zkErrorCode(failure)).toBe(-4);
    } finally {
      sockets.forEach((socket) => socket.destroy());
      await new Promise((resolve) => newer.close(resolve));
    }
  }, 15_000);
});

describe('ZooKeeper client: close', () => {
  it('lets go of a member that accepted and never answered, and fails what waited with CLOSING', async () => {
    const accepted: Socket[] = [];
    const silent: Server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.resume(); // reads, so that it sees the client's end
      accepted.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const client = new ZooKeeperClient(zk, { connect: `127.0.0.1:${(silent.address() as { port: number }).port}`, timeout: SESSION_TIMEOUT_MS });
      client.init();
      await vi.waitFor(() => expect(accepted).toHaveLength(1), { timeout: 2_000 });
      const call = client.exists('/').catch((error: unknown) => error);
      client.close();
      expect(zkErrorCode(await call)).toBe(-116);
      await once(accepted[0], 'close');
      // It does not connect again.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(accepted).toHaveLength(1);
    } finally {
      accepted.forEach((socket) => socket.destroy());
      await new Promise((resolve) => silent.close(resolve));
    }
  }, 15_000);
});

/** A TCP proxy that can cut the next reply of the server after a few bytes, closing the connection there. */
class CuttingProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private cutAfter: number | undefined;

  constructor(private readonly target: { readonly host: string; readonly port: number }) {
    this.server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.on('data', (chunk: Buffer) => upstream.write(chunk));
      upstream.on('data', (chunk: Buffer) => {
        if (this.cutAfter === undefined) return void client.write(chunk);
        const cut = chunk.subarray(0, this.cutAfter);
        this.cutAfter = undefined;
        client.end(cut);
        upstream.destroy();
      });
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  cutNextReplyAfter(bytes: number): void {
    this.cutAfter = bytes;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A jute frame's length prefix. */
function lengthOf(payload: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(payload.length, 0);
  return length;
}
