import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

/**
 * Debian's Chromium for end-to-end checks of the demo's report. Installed with apt when missing (root;
 * Playwright's own browser download cannot work on these machines), launched headless with the flags
 * that keep it off the network.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    if (process.getuid?.() !== 0) throw new Error('Chromium is missing: install it with `sudo apt-get install -y chromium`');
    const result = spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: 'ignore' });
    if (result.status !== 0) throw new Error(`apt-get install chromium failed (exit ${result.status})`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
