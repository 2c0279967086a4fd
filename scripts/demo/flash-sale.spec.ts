import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runFlashSale } from './flash-sale';

/** An HTTP server on loopback that answers every other purchase with the HTTP server's own empty 408, as Node does on a request timeout. */
function oddShop(): Promise<Server> {
  let count = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      count += 1;
      if (count % 2 === 0) {
        response.writeHead(408, { connection: 'close' }).end();
        return;
      }
      response.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'SOLD_OUT' }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('runFlashSale', () => {
  it('counts an answer that is not the shop’s JSON under its status, and keeps what came for the report', async () => {
    const server = await oddShop();
    try {
      const { port } = server.address() as AddressInfo;
      const outcome = await runFlashSale([{ port }], { sku: 'x', mode: 'locked', buyers: 4, concurrency: 1 });
      expect(outcome.statusCounts).toEqual({ '409 SOLD_OUT': 2, '408 not JSON': 2 });
      expect(outcome.failed).toBe(2);
      expect(outcome.oddAnswers).toHaveLength(2);
      expect(outcome.oddAnswers[0]).toMatch(/^408 not JSON after \d+ ms into the sale: answered in \d+ ms, ""$/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
