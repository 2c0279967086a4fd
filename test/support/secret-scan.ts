import util from 'node:util';
import type { LockEvents } from '@app/distributed-lock';

/**
 * Everything a failure can show a user, as text: the message, the stack, every field (util.inspect), and
 * the same for each error down the `cause` chain.
 */
export function errorTexts(error: unknown): string[] {
  const texts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 10; depth += 1) {
    texts.push(String(current), util.inspect(current, { depth: 6, showHidden: true }));
    if (current instanceof Error) texts.push(current.message, current.stack ?? '');
    current = (current as { cause?: unknown }).cause;
  }
  return texts;
}

/** Records every event a lock manager emits (every name, every argument), as text. */
export function recordEvents(events: LockEvents): string[] {
  const seen: string[] = [];
  const names = ['acquired', 'released', 'extended', 'lost', 'timeout', 'backgroundError'] as const;
  for (const name of names) {
    (events as unknown as { on(event: string, listener: (...args: unknown[]) => void): void }).on(name, (...args: unknown[]) => {
      seen.push(name, ...args.map((arg) => util.inspect(arg, { depth: 6, showHidden: true })));
      for (const arg of args) {
        const error = (arg as { error?: unknown }).error;
        if (error !== undefined) seen.push(...errorTexts(error));
      }
    });
  }
  return seen;
}

/**
 * Captures what the process prints while `body` runs: console.* and writes to stdout and stderr (Nest's
 * logger and any client library print through them). The originals are put back afterwards.
 */
export async function captureOutput<T>(body: () => Promise<T>): Promise<{ result: T; printed: string[] }> {
  const printed: string[] = [];
  const streams = [process.stdout, process.stderr];
  const writes = streams.map((stream) => stream.write.bind(stream));
  const consoleMethods = ['log', 'info', 'warn', 'error', 'debug'] as const;
  const originals = consoleMethods.map((method) => console[method]);
  streams.forEach((stream, i) => {
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      printed.push(String(chunk));
      return (writes[i] as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
  });
  consoleMethods.forEach((method, i) => {
    console[method] = (...args: unknown[]) => {
      printed.push(util.format(...args));
      (originals[i] as (...args: unknown[]) => void)(...args);
    };
  });
  try {
    return { result: await body(), printed };
  } finally {
    streams.forEach((stream, i) => (stream.write = writes[i] as typeof stream.write));
    consoleMethods.forEach((method, i) => (console[method] = originals[i] as (typeof console)[typeof method]));
  }
}

/** The texts that contain `secret` (none, when nothing leaked). */
export function leaksOf(secret: string, texts: readonly string[]): string[] {
  return texts.filter((text) => text.includes(secret));
}
