#!/usr/bin/env node
// Run by the library's `prepack`: the README and the LICENSE live at the repository's root, where users
// of the repository read them, and the tarball must carry both.
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const file of ['README.md', 'LICENSE']) copyFileSync(join(root, file), join(root, 'libs/distributed-lock', file));
