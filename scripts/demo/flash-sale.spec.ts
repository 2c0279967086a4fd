import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runFlashSale } from './flash-sale';

/** An HTTP server on loopback that answers each purchase as `answer` says for its ordinal (1, 2, …). */
function shop(answer: (ordinal: number) => 'sold out' | '408' | '502 text'): Promise<Server> {
  let count = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      count += 1;
      const kind = answer(count);
      // Node's own 408 on a request it did not read: no body, and the connection closed.
      if (kind === '408') response.writeHead(408, { connection: 'close' }).end();
      else if (kind === '502 text') response.writeHead(502, { 'content-type': 'text/plain' }).end('Bad Gateway');
      else response.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'SOLD_OUT' }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function saleAgainst(server: Server, buyers: number): Promise<Awaited<ReturnType<typeof runFlashSale>>> {
  try {
    const { port } = server.address() as AddressInfo;
    return await runFlashSale([{ port }], { sku: 'x', mode: 'locked', buyers, concurrency: 1 });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('runFlashSale', () => {
  it('counts an answer that is not the shop’s JSON under its status, and keeps what came for the report', async () => {
    const outcome = await saleAgainst(await shop((ordinal) => (ordinal % 2 === 0 ? '502 text' : 'sold out')), 4);
    expect(outcome.statusCounts).toEqual({ '409 SOLD_OUT': 2, '502 not JSON': 2 });
    expect(outcome.failed).toBe(2);
    expect(outcome.oddAnswers).toHaveLength(2);
    expect(outcome.oddAnswers[0]).toMatch(/^502 not JSON after \d+ ms into the sale: answered in \d+ ms, "Bad Gateway"$/);
  });

  it('sends a purchase again, once, when the server answered it with a bodiless 408 (it never read it)', async () => {
    // Buyer 1: 408, then its resend is answered. Buyer 2: answered. Buyer 3: 408 twice: counted as it came.
    const answers = ['408', 'sold out', 'sold out', '408', '408'] as const;
    const outcome = await saleAgainst(await shop((ordinal) => answers[ordinal - 1] ?? 'sold out'), 3);
    expect(outcome.resent408AfterMs).toHaveLength(2);
    expect(outcome.resent408AfterMs.every((ms) => ms >= 0 && ms < 5_000)).toBe(true);
    expect(outcome.statusCounts).toEqual({ '409 SOLD_OUT': 2, '408 not JSON': 1 });
    expect(outcome.oddAnswers.filter((odd) => odd.startsWith('408 resent'))).toHaveLength(2);
  });
});
