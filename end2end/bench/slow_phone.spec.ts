import { test, expect, BrowserContext, Page } from '@playwright/test';
import { writeFileSync } from 'fs';
import { password } from '../tests/support';

// A slow phone: 1.6 Mbit/s down, 750 kbit/s up, 150 ms round trip, the CPU four times slower.
const ROUNDS = Number(process.env.SLOW_PHONE_ROUNDS ?? 5);

interface Load {
  /** Navigation → hydrated on the page's own clock (its navigation start to the moment `data-hydrated` was set). */
  ms: number;
  /** The same seen from the test: it polls the page (every 500 ms after the first 270 ms), so it is later. */
  seen_ms: number;
  bytes: number; quiet_ms: number; quiet_bytes: number;
  /** Where the time went, from the page's own clock: the document's last byte, the code's last byte (the wasm
   *  modules and their JavaScript fetched before hydration), and from there to hydrated (compiling, running). */
  document_ms: number; code_ms: number; code_bytes: number;
  waterfall: { file: string; start_ms: number; first_byte_ms: number; last_byte_ms: number; bytes: number }[];
}

/** Quiet: nothing in flight and nothing new for this long (what the page fetches after it is interactive). */
const QUIET_MS = 3_000;

/** One cold load (a fresh context: no cache, no open connection), from navigation to hydrated, and on until the
 *  network is quiet. */
async function coldLoad(context: BrowserContext, path: string): Promise<Load> {
  const page: Page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 150, downloadThroughput: 1_600_000 / 8, uploadThroughput: 750_000 / 8,
  });
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
  // The moment the app marks the page hydrated, on the page's clock (0 = its navigation start).
  await page.addInitScript(() => {
    new MutationObserver((_, observer) => {
      if (document.body?.getAttribute('data-hydrated') === 'true') {
        (window as unknown as { hydratedAt: number }).hydratedAt = performance.now();
        observer.disconnect();
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-hydrated'] });
  });
  let bytes = 0;
  let inFlight = 0;
  let lastActivity = Date.now();
  cdp.on('Network.requestWillBeSent', () => { inFlight += 1; lastActivity = Date.now(); });
  cdp.on('Network.loadingFinished', (e) => { bytes += e.encodedDataLength; inFlight -= 1; lastActivity = Date.now(); });
  cdp.on('Network.loadingFailed', () => { inFlight -= 1; lastActivity = Date.now(); });
  const started = Date.now();
  await page.goto(path, { waitUntil: 'commit' });
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true', { timeout: 120_000 });
  const seenMs = Date.now() - started;
  const hydratedBytes = bytes;
  const timeline = await page.evaluate(() => {
    const document = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
    const code = (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
      .filter((r) => /\.(wasm|js)$/.test(new URL(r.name).pathname));
    return {
      ms: (window as unknown as { hydratedAt: number }).hydratedAt,
      document_ms: document.responseEnd,
      code_ms: Math.max(0, ...code.map((r) => r.responseEnd)),
      code_bytes: code.reduce((sum, r) => sum + r.transferSize, 0),
      waterfall: code.map((r) => ({
        file: new URL(r.name).pathname.split('/').pop(), start_ms: r.startTime, first_byte_ms: r.responseStart,
        last_byte_ms: r.responseEnd, bytes: r.transferSize,
      })),
    };
  });
  while (inFlight > 0 || Date.now() - lastActivity < QUIET_MS) {
    if (Date.now() - started > 120_000) break;
    await page.waitForTimeout(100);
  }
  const quiet = { quiet_ms: lastActivity - started, quiet_bytes: bytes };
  await page.close();
  return { seen_ms: seenMs, bytes: hydratedBytes, ...quiet, ...timeline };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const pages: [string, string, string | null][] = [
  ['the sign-in page', '/sign-in', null],
  ['the stalled board', '/', 'sato'],
  ['the approval inbox', '/approvals', 'suzuki'],
];

test('each first page hydrates on a slow phone', async ({ browser, baseURL }) => {
  const results: Record<string, {
    median_ms: number; median_seen_ms: number; median_bytes: number;
    median_quiet_ms: number; median_quiet_bytes: number;
    median_document_ms: number; median_code_ms: number; median_code_bytes: number; rounds: Load[];
  }> = {};
  for (const [name, path, user] of pages) {
    const rounds: Load[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const context = await browser.newContext({ baseURL, locale: 'ja-JP' });
      if (user) {
        // Signed in without loading a page, so that the page's files are not in the cache.
        const signedIn = await context.request.post('/api/sign_in', { form: { username: user, password: password(user) } });
        expect(signedIn.status()).toBe(200);
      }
      rounds.push(await coldLoad(context, path));
      await context.close();
    }
    results[name] = {
      median_ms: median(rounds.map((r) => r.ms)),
      median_seen_ms: median(rounds.map((r) => r.seen_ms)),
      median_bytes: median(rounds.map((r) => r.bytes)),
      median_quiet_ms: median(rounds.map((r) => r.quiet_ms)),
      median_quiet_bytes: median(rounds.map((r) => r.quiet_bytes)),
      median_document_ms: median(rounds.map((r) => r.document_ms)),
      median_code_ms: median(rounds.map((r) => r.code_ms)),
      median_code_bytes: median(rounds.map((r) => r.code_bytes)),
      rounds,
    };
  }
  writeFileSync(process.env.SLOW_PHONE_RESULTS ?? '../target/bench/slow-phone.json', JSON.stringify(results, null, 2));
  console.log(JSON.stringify(results, null, 2));
});
