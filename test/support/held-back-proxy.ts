import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback that passes everything through at once, except that what the server sends can be
 * held back for a while and then let through in order: a message delivered late on one connection while
 * the client's other connections go on (pub/sub messages are not ordered with the replies of another
 * connection). Every connection to it opens one to the target; either side closing closes both.
 */
export class HeldBackProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly toClients = new Set<{ readonly client: Socket; readonly kept: Buffer[] }>();
  private holding = false;

  constructor(readonly target: { readonly host: string; readonly port: number }) {
    this.server = createServer((client) => this.pipe(client));
  }

  /** Listens on 127.0.0.1 (on `port`, or a free port) and resolves the port. */
  async start(port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    return this.port;
  }

  /** The port it listens on. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** From now on, what the server sends is kept instead of passed on. */
  holdBack(): void {
    this.holding = true;
  }

  /** Sends what was kept, in order, and passes everything on from now on. */
  letThrough(): void {
    this.holding = false;
    for (const line of this.toClients) for (const chunk of line.kept.splice(0)) line.client.write(chunk);
  }

  /** Drops every connection open now, with what was kept for it (as a network cut would); new ones pass. */
  cut(): void {
    for (const line of this.toClients) line.kept.splice(0);
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    const line = { client, kept: [] as Buffer[] };
    this.toClients.add(line);
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => (this.holding ? line.kept.push(chunk) : client.write(chunk)));
    const cut = (): void => {
      this.toClients.delete(line);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', cut);
    upstream.on('close', cut);
  }
}
