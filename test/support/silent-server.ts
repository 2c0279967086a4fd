import { createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP server on loopback that accepts connections and never answers: the "server that is up but
 * hangs" every client must give up on in bounded time.
 */
export class SilentServer {
  private readonly sockets = new Set<Socket>();
  private readonly server: Server = createServer((socket) => {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    // Read (and drop) what the client sends: a socket nobody reads never sees the client's end behind the
    // bytes it sent first, and would count as open for good.
    socket.resume();
  });

  /** How many connections to it are open. */
  get openConnections(): number {
    return this.sockets.size;
  }

  /** Listens on a free port and resolves it. */
  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A loopback port nothing listens on (taken from the OS, then freed). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
