import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { WaitDistribution } from '../../scripts/demo/lock-wait-metrics';
import { renderReportHtml } from '../../scripts/demo/report-html';
import { launchChromium } from '../support/chromium';

const ROOT = resolve(__dirname, '..', '..');

/**
 * The report's lock-wait chart with every locked sale of `npm run demo -- --strategies all` (the waits of a
 * recorded run, bench/results/demo/), as Chromium draws it: one line per strategy that the eye can tell apart,
 * and every legend label inside the picture. `demo.spec.ts` checks the chart of the embedded run, which has
 * one locked sale.
 */
describe("the demo report's wait chart, every strategy", () => {
  it('draws one line per locked sale, each in its own style, with every label inside the chart', async () => {
    const waits = JSON.parse(readFileSync(join(ROOT, 'bench', 'results', 'demo', 'lock-waits-strategies-all.json'), 'utf8'), (_key, value: unknown) =>
      value === '+Inf' ? Infinity : value,
    ) as WaitDistribution[];
    expect(waits.length).toBeGreaterThanOrEqual(10);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.setContent(renderReportHtml([], { summary: 'wait chart' }, [], [], waits, []));
      const lines = page.locator('#lock-waits g.wait-cdf polyline');
      expect(await lines.count()).toBe(waits.length);
      // Runs in the page: its window's getComputedStyle (the workspace compiles without the DOM's types).
      const styles = await lines.evaluateAll((elements) => {
        const { getComputedStyle } = globalThis as unknown as { getComputedStyle(element: unknown): { stroke: string; strokeDasharray: string } };
        return elements.map((element) => `${getComputedStyle(element).stroke}|${getComputedStyle(element).strokeDasharray}`);
      });
      expect(new Set(styles).size).toBe(waits.length);
      const chart = await page.locator('#lock-waits svg').boundingBox();
      const labels = await page.locator('#lock-waits g.wait-cdf text.legend').evaluateAll((elements) =>
        elements.map((element) => {
          const box = element.getBoundingClientRect();
          return { text: element.textContent ?? '', right: box.right, bottom: box.bottom };
        }),
      );
      expect(labels.map((label) => label.text)).toEqual(waits.map((wait) => `${wait.strategy} (${wait.total})`));
      const outside = labels.filter((label) => chart === null || label.right > chart.x + chart.width || label.bottom > chart.y + chart.height);
      expect(outside).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
