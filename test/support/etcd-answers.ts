import type { Etcd3 } from 'etcd3';

type Answer = Awaited<ReturnType<ReturnType<Etcd3['if']>['commit']>>;

/**
 * Hands each of `client`'s transactions to `intercept`, with `send` (which sends it to etcd, once). The
 * caller gets what `intercept` resolves or rejects with: it can hold the request back, lose its answer
 * (throw after sending), or make the answer late.
 */
export function interceptTransactions(client: Etcd3, intercept: (send: () => Promise<Answer>) => Promise<Answer>): void {
  const realIf = client.if.bind(client);
  client.if = ((...args: Parameters<Etcd3['if']>) => {
    const builder = realIf(...args);
    const commit = builder.commit.bind(builder);
    builder.commit = () => intercept(commit);
    return builder;
  }) as Etcd3['if'];
}

/**
 * Runs `after` each time an answer to one of `client`'s transactions comes back, before the caller sees it.
 * etcd has applied the transaction by then: `after` can lose the answer (throw), make it late (wait), or
 * act at that moment.
 */
export function onTransactionAnswers(client: Etcd3, after: () => Promise<void> | void): void {
  interceptTransactions(client, async (send) => {
    const answer = await send();
    await after();
    return answer;
  });
}

/**
 * Runs `before` each time one of the leases `client` makes is about to send a keep-alive: `before` can
 * hold the request up (a slow link), so that it reaches etcd later than the caller sent it.
 */
export function beforeKeepAlives(client: Etcd3, before: () => Promise<void> | void): void {
  const realLease = client.lease.bind(client);
  client.lease = ((...args: Parameters<Etcd3['lease']>) => {
    const lease = realLease(...args);
    const keepaliveOnce = lease.keepaliveOnce.bind(lease);
    lease.keepaliveOnce = async (...options: Parameters<typeof keepaliveOnce>) => {
      await before();
      return keepaliveOnce(...options);
    };
    return lease;
  }) as Etcd3['lease'];
}
