import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** Milliseconds on a monotonic clock, with sub-millisecond precision. */
const now = (): number => performance.now();

/**
 * One direction of a connection: every chunk is written `delayMs` after it arrived, in arrival order.
 * Timers fire in whole milliseconds, late rather than early: a chunk whose time is less than a millisecond
 * away is sent from the check phase of the event loop (setImmediate) instead, so a 0.5 ms delay is 0.5 ms
 * and not 1–2. That spins only while such a chunk waits.
 */
class DelayLine {
  /** A null chunk ends the target (the other side hung up) once what came before it is through. */
  private readonly queue: Array<{ due: number; chunk: Buffer | null }> = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;

  constructor(
    private readonly to: Socket,
    private readonly delayMs: () => number,
  ) {}

  push(chunk: Buffer | null): void {
    const delayMs = this.delayMs();
    if (delayMs <= 0 && this.queue.length === 0) {
      this.send(chunk);
      return;
    }
    // A delay lowered meanwhile never sends a chunk before one that came earlier.
    const due = Math.max(now() + delayMs, this.queue.at(-1)?.due ?? 0);
    this.queue.push({ due, chunk });
    if (this.queue.length === 1) this.schedule();
  }

  stop(): void {
    clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.queue.length = 0;
  }

  private schedule(): void {
    const head = this.queue[0];
    if (!head) return;
    const wait = head.due - now();
    if (wait >= 1) this.timer = setTimeout(() => this.flush(), Math.floor(wait));
    else this.immediate = setImmediate(() => this.flush());
  }

  private flush(): void {
    this.timer = undefined;
    this.immediate = undefined;
    const at = now();
    while (this.queue.length > 0 && this.queue[0].due <= at) this.send((this.queue.shift() as { chunk: Buffer | null }).chunk);
    this.schedule();
  }

  private send(chunk: Buffer | null): void {
    if (this.to.destroyed) return;
    if (chunk) this.to.write(chunk);
    else this.to.end();
  }
}

/**
 * A TCP proxy on loopback that adds a fixed delay in each direction, so that a server on this machine
 * answers as one `2 × oneWayDelayMs` of round trip away would: a lock server in another zone, for the
 * tests and the benchmark. Every connection to it opens one to the target; either side closing closes both.
 */
export class LatencyProxy {
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  private listening = 0;
  /** While true, each new connection is closed at once (see `down`). */
  private refusing = false;

  constructor(
    readonly target: { readonly host: string; readonly port: number },
    /** Delay added to each direction, in ms (fractions allowed); a change applies to what comes through next. */
    public oneWayDelayMs: number,
  ) {
    this.server = createServer((client) => (this.refusing ? client.destroy() : this.pipe(client)));
  }

  /** The port it listens on (0 before `start`). */
  get port(): number {
    return this.listening;
  }

  /** Listens on 127.0.0.1 (`port`, or a free one) and resolves the port. */
  async start(port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.listening = (this.server.address() as AddressInfo).port;
    return this.listening;
  }

  /** Cuts every connection through it at once, as a network failure would; new ones are still accepted. */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /**
   * The server gone, as a stopped one is to its clients: every connection cut, and each new one closed at
   * once, until `up()`. The port stays this proxy's, so nothing else can take it meanwhile.
   */
  down(): void {
    this.refusing = true;
    this.cut();
  }

  /** The server back: new connections go through again. */
  up(): void {
    this.refusing = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    }
    const delay = (): number => this.oneWayDelayMs;
    const toServer = new DelayLine(upstream, delay);
    const toClient = new DelayLine(client, delay);
    client.on('data', (chunk: Buffer) => toServer.push(chunk));
    upstream.on('data', (chunk: Buffer) => toClient.push(chunk));
    // A side that hangs up is passed on after what it sent (a reply, then the close, each delayed); a
    // side that fails cuts both at once.
    client.on('end', () => toServer.push(null));
    upstream.on('end', () => toClient.push(null));
    const cut = (): void => {
      toServer.stop();
      toClient.stop();
      client.destroy();
      upstream.destroy();
    };
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', () => (upstream.destroyed ? undefined : toServer.push(null)));
    upstream.on('close', () => (client.destroyed ? undefined : toClient.push(null)));
  }
}

/** A server address in a connection string: `127.0.0.1:6379`, `localhost:2181`. */
const ADDRESS = /(\d{1,3}(?:\.\d{1,3}){3}|localhost):(\d{2,5})/g;

/**
 * The same connection string (`redis://127.0.0.1:16379`, a comma list, `mysql://u:p@127.0.0.1:13306/db`,
 * `127.0.0.1:12181`) with every server address replaced by a latency proxy's in front of it, one proxy per
 * address. The proxies are appended to `proxies`, for the caller to close.
 */
export async function behindProxies(value: string, oneWayDelayMs: number, proxies: LatencyProxy[]): Promise<string> {
  const addresses = [...new Set([...value.matchAll(ADDRESS)].map((match) => match[0]))];
  const ports = new Map<string, number>();
  for (const address of addresses) {
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    const proxy = new LatencyProxy({ host, port }, oneWayDelayMs);
    proxies.push(proxy);
    ports.set(address, await proxy.start());
  }
  return value.replace(ADDRESS, (address) => `127.0.0.1:${ports.get(address) as number}`);
}
