// Every relative link in the README, CONTRIBUTING and docs/ must lead somewhere: the file exists, and an
// anchor (`page.md#section`) names a heading of that page, spelled the way GitHub spells heading anchors.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = join(__dirname, '..');

function markdownFiles(): string[] {
  const files = ['README.md', 'CONTRIBUTING.md'].map((file) => join(ROOT, file));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith('.md')) files.push(path);
    }
  };
  walk(join(ROOT, 'docs'));
  return files;
}

/** The text outside fenced code blocks and inline code, where links and headings live. */
function prose(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) lines.push(line);
  }
  return lines;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = heading[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

interface Link {
  readonly from: string;
  readonly target: string;
}

function relativeLinks(file: string): Link[] {
  const links: Link[] = [];
  for (const line of prose(readFileSync(file, 'utf8'))) {
    const text = line.replace(/`[^`]*`/g, '');
    for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      links.push({ from: relative(ROOT, file), target });
    }
  }
  return links;
}

describe('relative links in the README, CONTRIBUTING and docs/', () => {
  const links = markdownFiles().flatMap(relativeLinks);

  it('there are some', () => {
    expect(links.length).toBeGreaterThan(50);
  });

  it.each(links.map((link) => [`${link.from} → ${link.target}`, link] as const))('%s resolves', (_, link) => {
    const [path, anchor] = link.target.split('#');
    const file = path === '' ? join(ROOT, link.from) : resolve(dirname(join(ROOT, link.from)), decodeURIComponent(path));
    expect({ link: link.target, exists: existsSync(file) }).toEqual({ link: link.target, exists: true });
    if (anchor !== undefined && file.endsWith('.md')) {
      const anchors = anchorsOf(readFileSync(file, 'utf8'));
      expect({ link: link.target, anchor: anchors.has(anchor) }).toEqual({ link: link.target, anchor: true });
    }
  });
});
