// One instance of an application that campaigns in one leader election per strategy (LEADER_RUN names
// them). Prints, with CLOCK_MONOTONIC in ns (shared by every process of the machine):
//   "ready" once campaigning, "gained <strategy> <term|-> <ns>", "lost <strategy> <term|-> <reason> <ns>",
//   "write <strategy> <term> accepted|rejected <sent ns> <answered ns>" (the fenced write each new leader makes
//   at once; a process frozen between the two times may find a newer leader's write there first),
//   and on a "write" line from stdin, for every election it led last, the write a careless old leader
//   makes whatever it believes: "stale-write <strategy> <term> accepted|rejected aborted=<signal state before it>
//   <sent ns> <answered ns>".
// SIGTERM closes the app (resigning); SIGKILL is the crash, SIGSTOP the freeze.
import 'reflect-metadata';
import { createInterface } from 'node:readline';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DistributedLockModule, OnLeadershipGained, OnLeadershipLost, type LeadershipGainedEvent, type LeadershipLostEvent } from '@app/distributed-lock';
import { APP_STRATEGIES, createAppStrategies } from '../app-strategies';
import { FencedResource } from '../fenced-resource';
import { monotonicNow } from '../history/hold-history';
import { fencedResourceOf, LEADER_TTL_MS } from './leader-app.config';

const RUN = process.env.LEADER_RUN ?? 'local';
const strategyOf = (election: string): string => election.slice(RUN.length + 1);
const say = (line: string): void => void process.stdout.write(`${line}\n`);

@Injectable()
class Leadership {
  private readonly resource = new FencedResource();
  /** The last term this process led, per strategy, with the signal it was given then. */
  private readonly last = new Map<string, { term: number; signal: AbortSignal }>();

  @OnLeadershipGained()
  async gained(event: LeadershipGainedEvent): Promise<void> {
    const strategy = strategyOf(event.election);
    say(`gained ${strategy} ${event.term ?? '-'} ${monotonicNow()}`);
    if (event.term === undefined) return;
    this.last.set(strategy, { term: event.term, signal: event.signal });
    const sentAt = monotonicNow();
    const accepted = await this.resource.write(fencedResourceOf(RUN, strategy), event.term, `pid-${process.pid}`);
    say(`write ${strategy} ${event.term} ${accepted ? 'accepted' : 'rejected'} ${sentAt} ${monotonicNow()}`);
  }

  @OnLeadershipLost()
  lost(event: LeadershipLostEvent): void {
    say(`lost ${strategyOf(event.election)} ${event.term ?? '-'} ${event.reason} ${monotonicNow()}`);
  }

  /** What an old leader that does not look at its signal would write on waking. */
  async staleWrites(): Promise<void> {
    await Promise.all(
      [...this.last].map(async ([strategy, { term, signal }]) => {
        const aborted = signal.aborted;
        const sentAt = monotonicNow();
        const accepted = await this.resource.write(fencedResourceOf(RUN, strategy), term, `pid-${process.pid}-stale`);
        say(`stale-write ${strategy} ${term} ${accepted ? 'accepted' : 'rejected'} aborted=${aborted} ${sentAt} ${monotonicNow()}`);
      }),
    );
  }

  close(): Promise<void> {
    return this.resource.close();
  }
}

function appModule(): DynamicModule {
  const features = Object.keys(APP_STRATEGIES).map((strategy) =>
    DistributedLockModule.forFeature({ strategy, elections: [{ name: `${RUN}-${strategy}`, ttl: LEADER_TTL_MS, retry: { initialDelay: 200, maxDelay: 1_000 } }] }),
  );
  @Module({
    imports: [DistributedLockModule.forRootAsync({ useFactory: async () => ({ strategies: await createAppStrategies(), defaultStrategy: 'redis' }) }), ...features],
    providers: [Leadership],
  })
  class LeaderModule {}
  return { module: LeaderModule };
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(appModule(), { logger: ['error'] });
  await app.init();
  const leadership = app.get(Leadership);
  say('ready');
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'write') void leadership.staleWrites().catch((error: unknown) => say(`error ${String(error)}`));
  });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => leadership.close())
      .then(() => process.exit(0));
  });
  setTimeout(() => void app.close().then(() => process.exit(0)), 180_000).unref();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
