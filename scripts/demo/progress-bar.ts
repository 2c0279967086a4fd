/** A one-line progress bar on a terminal; on a pipe (CI), a line at every quarter instead. */
export function progressBar(label: string, total: number): { update(done: number): void; finish(suffix: string): void } {
  const tty = process.stderr.isTTY === true;
  let lastQuarter = -1;
  const render = (done: number): string => {
    const width = 30;
    const filled = Math.round((done / total) * width);
    return `${label.padEnd(24)} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(done).padStart(String(total).length)}/${total}`;
  };
  return {
    update(done) {
      if (tty) {
        process.stderr.write(`\r${render(done)}`);
        return;
      }
      const quarter = Math.floor((done / total) * 4);
      if (quarter !== lastQuarter) {
        lastQuarter = quarter;
        process.stderr.write(`${render(done)}\n`);
      }
    },
    finish(suffix) {
      process.stderr.write(`${tty ? `\r${render(total)}` : ''} ${suffix}\n`);
    },
  };
}
