import { appendFileSync, readFileSync } from 'node:fs';
import { monotonicNow } from '../history/hold-history';

/** One run of a scheduled job, as the instance that ran it saw it. */
export interface ScheduledRunRecord {
  readonly job: string;
  readonly instance: string;
  /** The cron tick the run belongs to, on the running instance's own clock (ms since epoch). */
  readonly tick: number;
  /** CLOCK_MONOTONIC (ns, shared by every process of the machine) at the run's first and last line. */
  readonly from: string;
  until?: string;
}

type Line = ScheduledRunRecord | { readonly end: string; readonly at: string };

/** Runs of scheduled jobs, appended by any number of app processes to one JSON-lines file. */
export class ScheduledRunLog {
  private next = 0;

  constructor(
    readonly file: string,
    private readonly instance: string,
  ) {}

  /** Records a run's start at once (a process killed inside it leaves it), and returns its end. */
  begin(job: string): () => void {
    const id = `${this.instance}-${process.pid}-${(this.next += 1)}`;
    const record: ScheduledRunRecord & { id: string } = { id, job, instance: this.instance, tick: Math.floor(Date.now() / 1_000) * 1_000, from: monotonicNow() };
    appendFileSync(this.file, `${JSON.stringify(record)}\n`);
    process.stdout.write(`run ${job} ${record.tick}\n`);
    return () => appendFileSync(this.file, `${JSON.stringify({ end: id, at: monotonicNow() })}\n`);
  }

  /** Every run recorded in `file`, each with its end when it had one. */
  static read(file: string): ScheduledRunRecord[] {
    const runs = new Map<string, ScheduledRunRecord>();
    for (const text of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
      const line = JSON.parse(text) as Line & { id?: string };
      if ('end' in line) {
        const run = runs.get(line.end);
        if (run) run.until = line.at;
      } else if (line.id) {
        runs.set(line.id, line);
      }
    }
    return [...runs.values()];
  }
}
