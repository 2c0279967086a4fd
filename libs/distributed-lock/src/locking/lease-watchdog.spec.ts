import { LeaseWatchdog } from './lease-watchdog';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('LeaseWatchdog', () => {
  it('renews at its interval while renewals succeed', async () => {
    let expiresAt = Date.now() + 90;
    let renewals = 0;
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          renewals += 1;
          expiresAt = Date.now() + 90;
          return true;
        },
        onGone: (reason) => gone.push(reason),
        onRenewFailed: () => undefined,
      },
      30,
    );
    dog.start();
    await sleep(250);
    dog.stop();
    expect(renewals).toBeGreaterThanOrEqual(3);
    expect(gone).toEqual([]);
  });

  it('reports a refused renewal at once', async () => {
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      { expiresAt: () => Date.now() + 1000, renew: async () => false, onGone: (reason) => gone.push(reason), onRenewFailed: () => undefined },
      10,
    );
    dog.start();
    await sleep(60);
    expect(gone).toEqual(['extension-refused']);
  });

  it('retries failed renewals and gives up once the lease has run out', async () => {
    const expiresAt = Date.now() + 120;
    const failures: unknown[] = [];
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          throw new Error('down');
        },
        onGone: (reason) => gone.push(reason),
        onRenewFailed: (error) => failures.push(error),
      },
      40,
    );
    dog.start();
    await sleep(400);
    expect(failures.length).toBeGreaterThanOrEqual(2);
    expect(gone).toEqual(['backend-unreachable']);
  });

  it('without renewal, fires "expired" at the end of the lease', async () => {
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      { expiresAt: () => Date.now() + 50, renew: async () => true, onGone: (reason) => gone.push(reason), onRenewFailed: () => undefined },
      undefined,
    );
    dog.start();
    await sleep(150);
    expect(gone).toEqual(['expired']);
  });
});
