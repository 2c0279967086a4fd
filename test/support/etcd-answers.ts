import type { Etcd3 } from 'etcd3';

/**
 * Runs `after` each time an answer to one of `client`'s transactions comes back, before the caller sees it.
 * etcd has applied the transaction by then: `after` can lose the answer (throw), make it late (wait), or
 * act at that moment.
 */
export function onTransactionAnswers(client: Etcd3, after: () => Promise<void> | void): void {
  const realIf = client.if.bind(client);
  client.if = ((...args: Parameters<Etcd3['if']>) => {
    const builder = realIf(...args);
    const commit = builder.commit.bind(builder);
    builder.commit = async () => {
      const answer = await commit();
      await after();
      return answer;
    };
    return builder;
  }) as Etcd3['if'];
}
