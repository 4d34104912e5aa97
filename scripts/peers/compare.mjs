// Measures tabwarden's browser_observe next to Playwright MCP's
// browser_snapshot, Chrome DevTools MCP's take_snapshot and agent-browser's
// `snapshot -i` (its CLI, as its docs tell agents to use it) in one run: the
// same pages (served from the team bench's pages.mjs), the same reps and the
// same Chromium binary, with the method of /work/shared/bench/peers.mjs
// (navigate once per size, then time the snapshot tool `reps` times and
// count the characters of its text content).
//
// Usage (scripts/peers/run.sh does all of this):
//   node compare.mjs --deps DIR --bench BIN [--pages pages.mjs]
//                    [--sizes 50,500,2000] [--reps 7] [--chromium PATH]
//                    [--only tabwarden,playwright-mcp,chrome-devtools-mcp,agent-browser]
//                    [--no-walk] [--dump DIR]
// DIR holds node_modules with @modelcontextprotocol/sdk, @playwright/mcp,
// chrome-devtools-mcp and agent-browser; BIN is the built
// scripts/peers/tabwarden-bench. --dump writes each server's first snapshot
// text per size to DIR/<server>-<n>.txt (and a later one, when it differs,
// to DIR/<server>-<n>-repeat.txt), to read what the model reads.
//
// `chars` is the first snapshot of each page, the one an agent reads on
// arrival; `chars_repeat` the last rep's. The peers answer the same both
// times; tabwarden's first observation of a document carries a short text
// digest and later ones its default text page (docs/design.md §6).
//
// Stdout: a meta line, one JSON line per (server, n), then one ratio line per
// (peer, n). Stderr: the same as a Markdown table.
//
// What tabwarden's numbers include: its MCP server runs over Streamable HTTP
// with a bearer token (the peers run over stdio, as their docs set them up);
// every call goes through the consent engine. Under the strict profile the
// first browser_open waits for a navigation review and the first observe of
// the origin for a read review; tabwarden-bench's stand-in approves each one
// as soon as the key-ahead guard (1 ms) allows. Those calls are timed like
// any other and stay in the medians; each row lists the reviews that fell
// inside its calls (`reviews`) and the first rep's time (`observe_ms_first`).
import { createRequire } from 'node:module';
import { spawn, execFile, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
const arg = (k, d) => { const i = argv.indexOf(k); return i >= 0 ? argv[i + 1] : d; };
const sizes = arg('--sizes', '50,500,2000').split(',').map(Number);
const reps = Number(arg('--reps', '7'));
const chromium = arg('--chromium', '/usr/bin/chromium');
const deps = resolve(arg('--deps', process.env.PEER_DEPS || '.'));
const bench = arg('--bench', '');
const pagesPath = resolve(arg('--pages', process.env.PEER_PAGES || '/work/shared/bench/pages.mjs'));
const only = arg('--only', '').split(',').filter(Boolean);
const walk = !argv.includes('--no-walk');
const dump = arg('--dump', '');
if (dump) mkdirSync(dump, { recursive: true });

const require = createRequire(join(deps, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { serve } = await import(pathToFileURL(pagesPath).href);

const median = a => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const text = res => (res.content || []).filter(c => c.type === 'text').map(c => c.text).join('\n');
const round1 = x => +x.toFixed(1);
const bin = name => join(deps, 'node_modules', '.bin', name);
const version = pkg => { try { return JSON.parse(readFileSync(join(deps, 'node_modules', pkg, 'package.json'), 'utf8')).version; } catch { return 'unknown'; } };

// tabwarden's result object: structuredContent, else the JSON text.
const body = res => res.structuredContent || (() => { try { return JSON.parse(text(res)); } catch { return {}; } })();
const twRefs = snap => (snap.match(/^e\d+ /gm) || []).length;

// Peers: the launch arguments of peers.mjs, with the installed binaries run
// directly (npx --no-install cannot find them from the per-run temp cwd).
const peer = (name, args, navigate, snapshot, refs) => ({
  name,
  async start() {
    const home = mkdtempSync(join(tmpdir(), 'peer-'));
    const cwd = mkdtempSync(join(tmpdir(), 'peer-cwd-'));
    const transport = new StdioClientTransport({ command: bin(name), args, stderr: 'ignore', cwd, env: { ...process.env, HOME: home } });
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(transport);
    return {
      client,
      navigate: url => [navigate(url)],
      snapshot: () => snapshot(),
      measure: res => { const t = text(res); return { chars: t.length, refs: refs(t), text: t }; },
      async stop() {
        const pid = transport.pid;
        await client.close();
        await gone(pid);
        rmSync(home, { recursive: true, force: true });
        rmSync(cwd, { recursive: true, force: true });
      },
    };
  },
});

// agent-browser is a CLI with a daemon per session: `open URL`, then
// `snapshot -i` (interactive elements only, what its docs tell agents to
// use). Each call is one run of its native binary, as an agent's shell tool
// would run it, so its times include starting that process. Its answer is
// the stdout without the trailing newline.
const agentBrowser = {
  name: 'agent-browser',
  async start() {
    const exe = join(deps, 'node_modules', 'agent-browser', 'bin', `agent-browser-${process.platform}-${process.arch === 'x64' ? 'x64' : process.arch}`);
    const home = mkdtempSync(join(tmpdir(), 'peer-'));
    const session = `bench${process.pid}`;
    const env = { ...process.env, HOME: home };
    const run = args => new Promise(ok => execFile(exe, ['--session', session, ...args], { env, maxBuffer: 64 << 20 }, (err, stdout, stderr) => ok({ err, stdout: stdout.replace(/\n$/, ''), stderr })));
    let launched = false;
    const client = {
      async callTool({ name, arguments: a }) {
        const args = name === 'open'
          ? [...(launched ? [] : ['--executable-path', chromium, '--args', '--no-sandbox,--disable-background-networking']), 'open', a.url]
          : ['snapshot', '-i'];
        const r = await run(args);
        if (name === 'open' && !r.err) launched = true;
        return { isError: !!r.err, content: [{ type: 'text', text: r.err ? `${r.err.message} ${r.stderr}` : r.stdout }] };
      },
    };
    return {
      client,
      navigate: url => [['open', { url }]],
      snapshot: () => ['snapshot', {}],
      measure: res => { const t = text(res); return { chars: t.length, refs: (t.match(/\bref=e\d+/g) || []).length, text: t }; },
      async stop() {
        await run(['close']);
        rmSync(home, { recursive: true, force: true });
      },
    };
  },
};

const servers = [
  {
    name: 'tabwarden',
    async start() {
      if (!bench) throw new Error('--bench BIN is required for tabwarden');
      const child = spawn(bench, ['--chromium', chromium], { stdio: ['pipe', 'pipe', 'inherit'] });
      const lines = createInterface({ input: child.stdout });
      const events = [];
      const info = await new Promise((ok, fail) => {
        child.once('exit', code => fail(new Error(`tabwarden-bench exited ${code} before listening`)));
        lines.once('line', l => ok(JSON.parse(l)));
      });
      lines.on('line', l => events.push(JSON.parse(l)));
      const transport = new StreamableHTTPClientTransport(new URL(info.url), { requestInit: { headers: { Authorization: `Bearer ${info.token}` } } });
      const client = new Client({ name: 'bench', version: '1' });
      await client.connect(transport);
      let tabId = '';
      return {
        client, info, events,
        navigate: url => tabId ? [['browser_navigate', { tabId, url }]] : [['browser_open', { url }], res => { tabId = body(res).tabId; }],
        snapshot: (extra = {}) => ['browser_observe', { tabId, ...extra }],
        measure: res => { const b = body(res); const snap = b.snapshot || ''; return { chars: text(res).length, text: text(res), refs: twRefs(snap), snapshot_field_chars: snap.length, counts: b.counts, cursor: b.cursor || '', left_out: b.leftOut }; },
        async stop() {
          await transport.terminateSession().catch(() => {});
          await client.close();
          child.stdin.end();
          await gone(child.pid, 30000);
        },
      };
    },
  },
  peer('playwright-mcp', ['--headless', '--isolated', '--no-sandbox', '--executable-path', chromium, '--browser', 'chromium'],
    url => ['browser_navigate', { url }], () => ['browser_snapshot', {}], t => (t.match(/\[ref=/g) || []).length),
  peer('chrome-devtools-mcp', ['--headless', '--isolated', '--executablePath', chromium, '--chromeArg=--no-sandbox', '--chromeArg=--disable-background-networking'],
    url => ['navigate_page', { pageId: 1, url, type: 'url' }], () => ['take_snapshot', { pageId: 1 }], t => (t.match(/uid=/g) || []).length),
  agentBrowser,
];

// gone waits for pid to exit, then ends it by pid: SIGTERM, and SIGKILL
// after another grace period.
async function gone(pid, graceMs = 10000) {
  if (!pid) return;
  const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
  for (const sig of [null, 'SIGTERM', 'SIGKILL']) {
    if (sig && alive()) { console.error(`compare: pid ${pid} still running, sending ${sig}`); try { process.kill(pid, sig); } catch {} }
    const until = Date.now() + graceMs;
    while (alive() && Date.now() < until) await new Promise(r => setTimeout(r, 50));
    if (!alive()) return;
  }
}

async function call(client, name, args, log) {
  const wall0 = Date.now();
  const t0 = performance.now();
  const res = await client.callTool({ name, arguments: args });
  const ms = performance.now() - t0;
  log.push({ name, wall0, wall1: Date.now() });
  if (res.isError) throw new Error(`${name}: ${text(res).slice(0, 300)}`);
  return { res, ms };
}

// reviewsIn attributes tabwarden-bench's approvals to the calls they held
// up, by the wall-clock time of each decision.
function reviewsIn(events, log) {
  const out = [];
  for (const ev of events.filter(e => e.event)) {
    const c = log.find(c => ev.decidedMs >= c.wall0 - 1 && ev.decidedMs <= c.wall1 + 1);
    out.push({ call: c ? c.name : 'none', kind: ev.kind, event: ev.event, wait_ms: ev.waitMs });
  }
  events.length = 0;
  return out;
}

const chromiumVersion = (() => { try { return execFileSync(chromium, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim(); } catch { return 'unknown'; } })();
console.log(JSON.stringify({ meta: {
  date: new Date().toISOString(), cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version, chromium: chromiumVersion,
  sizes, reps, peers: { '@playwright/mcp': version('@playwright/mcp'), 'chrome-devtools-mcp': version('chrome-devtools-mcp'), 'agent-browser': version('agent-browser'), '@modelcontextprotocol/sdk': version('@modelcontextprotocol/sdk') },
} }));

const http = await serve(0);
const base = `http://127.0.0.1:${http.address().port}`;
const rows = [];
try {
  for (const s of servers) {
    if (only.length && !only.includes(s.name)) continue;
    const h = await s.start();
    try {
      for (const n of sizes) {
        const url = `${base}/app?n=${n}`;
        const log = [];
        let navMs = 0, navChars = 0;
        const [[nt, na], after] = h.navigate(url);
        {
          const { res, ms } = await call(h.client, nt, na, log);
          navMs = ms; navChars = text(res).length;
          if (after) after(res);
        }
        const times = []; let first, last;
        for (let k = 0; k < reps; k++) {
          const [st, sa] = h.snapshot();
          const { res, ms } = await call(h.client, st, sa, log);
          times.push(ms); last = h.measure(res);
          if (k === 0) first = last;
        }
        if (dump) {
          writeFileSync(join(dump, `${s.name}-${n}.txt`), first.text);
          if (last.text !== first.text) writeFileSync(join(dump, `${s.name}-${n}-repeat.txt`), last.text);
        }
        const row = { server: s.name, n, navigate_ms: Math.round(navMs), observe_ms_median: round1(median(times)), observe_ms_min: round1(Math.min(...times)), observe_ms_first: round1(times[0]), chars: first.chars, chars_repeat: last.chars, approx_tokens: Math.round(first.chars / 4), refs: first.refs, nav_response_chars: navChars };
        if (s.name === 'tabwarden') {
          Object.assign(row, { snapshot_field_chars: last.snapshot_field_chars, counts: last.counts, left_out: last.left_out, paged: !!last.cursor });
          if (walk) {
            // A full walk: one fresh observe, then every cursor page.
            let t = 0, chars = 0, refs = 0, pages = 0, cursor;
            do {
              const [st, sa] = h.snapshot(cursor ? { cursor } : {});
              const { res, ms } = await call(h.client, st, sa, log);
              const m = h.measure(res);
              t += ms; chars += m.chars; refs += m.refs; pages++; cursor = m.cursor;
            } while (cursor && pages < 200);
            Object.assign(row, { walk_pages: pages, walk_ms: round1(t), walk_chars: chars, walk_refs: refs });
          }
          row.reviews = reviewsIn(h.events, log);
        }
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    } finally {
      await h.stop();
    }
  }
} finally {
  http.close();
}

// Ratios: tabwarden over each peer, per size. chars compares tabwarden's
// first page with the peer's whole snapshot; walk_* compares a full cursor
// walk with it.
const ratios = [];
const r2 = (a, b) => (a != null && b ? +(a / b).toFixed(2) : null);
for (const n of sizes) {
  const tw = rows.find(r => r.server === 'tabwarden' && r.n === n);
  if (!tw) continue;
  for (const p of rows.filter(r => r.server !== 'tabwarden' && r.n === n)) {
    const r = { ratio: `tabwarden/${p.server}`, n, observe_ms_median: r2(tw.observe_ms_median, p.observe_ms_median), chars: r2(tw.chars, p.chars), chars_repeat: r2(tw.chars_repeat, p.chars_repeat), walk_ms: r2(tw.walk_ms, p.observe_ms_median), walk_chars: r2(tw.walk_chars, p.chars) };
    ratios.push(r);
    console.log(JSON.stringify(r));
  }
}

const table = ['| server | n | observe median ms | first ms | chars (first) | chars (repeat) | refs | tabwarden full walk (pages, ms, chars) |', '|---|---:|---:|---:|---:|---:|---:|---|'];
for (const r of rows) table.push(`| ${r.server} | ${r.n} | ${r.observe_ms_median} | ${r.observe_ms_first} | ${r.chars} | ${r.chars_repeat} | ${r.refs} | ${r.walk_pages ? `${r.walk_pages}, ${r.walk_ms}, ${r.walk_chars}` : ''} |`);
table.push('', '| ratio | n | observe median ms | chars (first) | chars (repeat) | full walk ms | full walk chars |', '|---|---:|---:|---:|---:|---:|---:|');
for (const r of ratios) table.push(`| ${r.ratio} | ${r.n} | ${r.observe_ms_median} | ${r.chars} | ${r.chars_repeat} | ${r.walk_ms ?? ''} | ${r.walk_chars ?? ''} |`);
console.error(table.join('\n'));
