/**
 * The lock board's page: plain HTML and a script that polls `GET /ops/locks` (locks) and `GET
 * /ops/locks/permits` (semaphores) for the keys `GET /board/keys` names, grouped by strategy, and draws each
 * lock's holder (owner, fencing token, grant age, lease left as a bar) and waiting line, and each
 * semaphore's places taken, holders and waiting line. No framework: the page is the demo's, and what it shows is the library's answer.
 */
export function boardPage(instance: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Lock board · ${escapeHtml(instance)}</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; background: #f6f8fa; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  .meta { color: #59636e; margin-bottom: 16px; }
  .lock { background: #fff; border: 1px solid #d1d9e0; border-radius: 8px; padding: 12px 16px; margin-bottom: 12px; }
  .lock h2 { font-size: 15px; margin: 0 0 8px; display: flex; gap: 12px; align-items: baseline; }
  .lock h2 code { font-size: 12px; color: #59636e; font-weight: normal; }
  .state { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: #dafbe1; color: #116329; }
  .state.held { background: #fff1e5; color: #953800; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 3px 8px 3px 0; font-variant-numeric: tabular-nums; }
  th { font-size: 12px; color: #59636e; font-weight: 600; }
  .lease { width: 160px; }
  .lease .bar { height: 8px; background: #eaeef2; border-radius: 4px; overflow: hidden; }
  .lease .bar span { display: block; height: 100%; background: #bf8700; }
  ol.waiters { margin: 6px 0 0; padding-left: 22px; color: #1f2328; }
  .none { color: #59636e; }
  .places { margin: 2px 0 8px; display: flex; gap: 4px; align-items: center; }
  .place { width: 18px; height: 18px; border-radius: 4px; background: #eaeef2; border: 1px solid #d1d9e0; }
  .place.taken { background: #bf8700; border-color: #9a6700; }
  .error { color: #cf222e; }
</style>
</head>
<body>
<h1>Lock board</h1>
<div class="meta">served by <b>${escapeHtml(instance)}</b> · asks <code>GET /ops/locks</code> every 200 ms · <span id="updated">…</span></div>
<div id="board"></div>
<script>
const board = document.getElementById('board');
const updated = document.getElementById('updated');
const text = (value) => String(value).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const who = (owner) => (owner.instance ? owner.instance + ' (' + owner.host + ' pid ' + owner.pid + ')' : owner.host + ' pid ' + owner.pid);
let watched = [];

function card(entry, info, now) {
  if (!info) return '<section class="lock" data-key="' + text(entry.key) + '"><h2>' + text(entry.label) + '</h2><div class="error">no answer</div></section>';
  const holders = info.held.map((holder) => {
    const ttl = holder.expiresAt === null ? null : Math.max(0, holder.expiresAt - now);
    const span = holder.expiresAt !== null && holder.grantedAt !== null ? Math.max(1, holder.expiresAt - holder.grantedAt) : null;
    const lease = ttl === null ? '<td class="lease">unknown</td>' : '<td class="lease"><div class="bar"><span style="width:' + (span ? Math.min(100, (100 * ttl) / span) : 100).toFixed(1) + '%"></span></div>' + ttl + ' ms left</td>';
    return '<tr class="holder" data-owner="' + text(holder.owner.id) + '"><td>' + text(holder.mode) + '</td><td>' + text(who(holder.owner)) + '</td><td class="token">' + (holder.fencingToken ?? '—') + '</td><td>' + (holder.grantedAt === null ? '—' : (now - holder.grantedAt) + ' ms ago') + '</td>' + lease + '</tr>';
  });
  const waiting = info.pending === null ? '<div class="none">this backend keeps no queue</div>'
    : info.pending.length === 0 ? '<div class="none">nobody waits</div>'
    : '<ol class="waiters">' + info.pending.map((waiter) => '<li class="waiter">' + text(who(waiter.owner)) + ' <span class="none">' + text(waiter.mode) + '</span></li>').join('') + '</ol>';
  return '<section class="lock" data-key="' + text(entry.key) + '"><h2>' + text(entry.label) + ' <code>' + text(entry.key) + '</code> <span class="state' + (holders.length ? ' held' : '') + '">' + (holders.length ? 'held' : 'free') + '</span></h2>'
    + (holders.length ? '<table><tr><th>mode</th><th>holder</th><th>fencing token</th><th>granted</th><th>lease</th></tr>' + holders.join('') + '</table>' : '<div class="none">nobody holds it</div>')
    + '<div><b>waiting</b></div>' + waiting + '</section>';
}

function semaphoreCard(entry, info, now) {
  if (!info) return '<section class="lock" data-key="' + text(entry.key) + '"><h2>' + text(entry.label) + '</h2><div class="error">no answer</div></section>';
  const size = info.permits ?? 0;
  const holders = info.held.map((holder) => {
    const ttl = holder.expiresAt === null ? null : Math.max(0, holder.expiresAt - now);
    return '<tr class="holder" data-owner="' + text(holder.owner.id) + '"><td>' + holder.weight + '</td><td>' + text(who(holder.owner)) + '</td><td class="token">' + (holder.fencingToken ?? '—') + '</td><td>' + (ttl === null ? 'unknown' : ttl + ' ms left') + '</td></tr>';
  });
  const places = '<div class="places">' + Array.from({ length: Math.max(size, info.inUse) }, (_, i) => '<span class="place' + (i < info.inUse ? ' taken' : '') + '"></span>').join('') + ' <b class="in-use">' + info.inUse + '</b> of ' + (info.permits ?? '?') + ' places taken</div>';
  const waiting = info.pending === null ? '<div class="none">waiters poll; this backend keeps no queue</div>'
    : info.pending.length === 0 ? '<div class="none">nobody waits</div>'
    : '<ol class="waiters">' + info.pending.map((waiter) => '<li class="waiter">' + text(who(waiter.owner)) + ' <span class="none">weight ' + waiter.weight + '</span></li>').join('') + '</ol>';
  return '<section class="lock semaphore" data-key="' + text(entry.key) + '"><h2>' + text(entry.label) + ' <code>' + text(entry.key) + '</code> <span class="state' + (info.inUse ? ' held' : '') + '">semaphore</span></h2>' + places
    + (holders.length ? '<table><tr><th>weight</th><th>holder</th><th>fencing token</th><th>lease</th></tr>' + holders.join('') + '</table>' : '')
    + '<div><b>waiting</b></div>' + waiting + '</section>';
}

async function refresh() {
  const groups = new Map();
  for (const entry of watched) {
    const group = entry.kind + ' ' + entry.strategy;
    groups.set(group, [...(groups.get(group) ?? []), entry]);
  }
  const answers = new Map();
  await Promise.all([...groups.values()].map(async (entries) => {
    const { kind, strategy } = entries[0];
    const query = entries.map((entry) => 'key=' + encodeURIComponent(entry.key)).join('&');
    const response = await fetch((kind === 'semaphore' ? '/ops/locks/permits' : '/ops/locks') + '?strategy=' + encodeURIComponent(strategy) + '&' + query);
    if (!response.ok) return;
    const body = await response.json();
    (kind === 'semaphore' ? body.semaphores : body.locks).forEach((info, i) => answers.set(entries[i].key, info));
  }));
  const now = Date.now();
  // A screenshot test freezes the board (window.boardFrozen) once it shows what it wants to capture.
  if (window.boardFrozen) return;
  board.innerHTML = watched.map((entry) => (entry.kind === 'semaphore' ? semaphoreCard : card)(entry, answers.get(entry.key), now)).join('');
  updated.textContent = 'updated ' + new Date(now).toLocaleTimeString();
  document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes ?? 0) + 1);
}

async function loop() {
  try {
    watched = await (await fetch('/board/keys')).json();
    await refresh();
  } catch (error) {
    updated.innerHTML = '<span class="error">' + text(error) + '</span>';
  }
  setTimeout(loop, 200);
}
loop();
</script>
</body>
</html>
`;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}
