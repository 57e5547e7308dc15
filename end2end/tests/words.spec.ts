import { test, expect, signIn, hydrated } from './support';
import { Page } from '@playwright/test';
import { readFileSync } from 'fs';

// Every word in the reader's language (issue 24). Each role walks every page it can reach, in Japanese and in
// English, and the walk fails on a word of the other language. Not words of the page: what people wrote and the
// names they gave (marked `data-entered`, and what is in a text field), what outside systems said (`<samp>`),
// codes (`<code>`, `<kbd>`), and text declared in another language (`lang`, e.g. the language switch). The Japanese walk also lets through
// identifiers: anything with a digit or a separator (ORD-1002, order-intake, register_order, Asia/Tokyo), short
// acronyms (API, ID, CSV, JST) and the names below.
//
// This file runs last (files run in name order, one worker): the pages the other tests made — a request with its
// checklist, a bulk rerun, an incident, a drill — are walked too, and the walk fails if it did not reach them.
const MUST_REACH: Record<string, string[]> = {
  sato: ['operations', 'reruns', 'batches', 'incidents'],
  suzuki: ['operations', 'reruns', 'batches', 'incidents'],
  admin: ['admin/drills'],
};

const START = ['/', '/approvals', '/batches', '/incidents', '/reviews', '/audit', '/notifications', '/account',
  '/account/password', '/decision-table', '/stop-switch', '/admin/users', '/admin/api-clients',
  '/admin/configuration', '/admin/drills'];
// Detail pages reached by links, at most a few of each kind per role (they share their words).
const DETAILS = /^\/(operations|reruns|batches|incidents|admin\/drills)\/[^/?#]+$/;
const PER_KIND = 12;

const usernames = readFileSync(process.env.CREDENTIALS_FILE ?? '', 'utf8').trim().split('\n').map((l) => l.split(' ')[0]);
// Names of the demo's configuration, its outside systems' fields and statuses, and the codes shown beside labels.
const NAMES = new Set([
  'Rerun', 'Gate', 'Excel', 'Webhook', 'Lines', 'sales', 'billing', 'demo', 'mail', 'staff', 'manager', 'auditor',
  'admin', 'completed', 'amount', 'item', 'user', 'operation', 'incident', 'batch', ...usernames,
  'Slack', 'Teams', // the company chats, by their names
  'takeda', // the company sign-in's user at the suite's identity provider (run.sh), a sign-in name like the others
]);

const latinWords = (text: string) => text.match(/[A-Za-z][A-Za-z0-9_.:/@'’-]*/g) ?? [];
const identifier = (word: string) => /[0-9_.:/@-]/.test(word) || /^[A-Z]{2,6}s?$/.test(word) || NAMES.has(word);
const notJapanese = (text: string) => latinWords(text).filter((w) => !identifier(w));
const notEnglish = (text: string) => text.match(/[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef]+/g) ?? [];

/** The page's own words: visible text and the labels it gives (aria-label, placeholder, alt, title). */
async function pageWords(page: Page): Promise<{ text: string; where: string }[]> {
  return page.evaluate(() => {
    const pageLang = document.documentElement.lang;
    const foreign = (el: Element) =>
      !!el.closest('script,style,template,textarea,code,kbd,samp,[data-entered]') ||
      (el.closest('[lang]')?.getAttribute('lang') ?? pageLang) !== pageLang;
    const where = (el: Element) => {
      const path: string[] = [];
      for (let e: Element | null = el; e && e !== document.body && path.length < 3; e = e.parentElement) {
        const id = e.getAttribute('data-testid');
        path.unshift(e.tagName.toLowerCase() + (id ? `[${id}]` : ''));
      }
      return path.join('>');
    };
    const out: { text: string; where: string }[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement!;
      const text = n.textContent!.trim();
      if (text && !foreign(el)) out.push({ text, where: where(el) });
    }
    for (const el of Array.from(document.querySelectorAll('[aria-label],[placeholder],[alt],[title]'))) {
      if (foreign(el)) continue;
      for (const name of ['aria-label', 'placeholder', 'alt', 'title']) {
        const value = el.getAttribute(name);
        // A title holding a code (the timeline's raw action) is a code.
        if (value && !(name === 'title' && /^[a-z_.]+$/.test(value))) out.push({ text: value, where: `${where(el)}@${name}` });
      }
    }
    return out;
  });
}

async function walk(page: Page, strangers: (text: string) => string[]) {
  const seen = new Set<string>();
  const perKind = new Map<string, number>();
  const queue = [...START];
  const found: string[] = [];
  const wide: string[] = [];
  while (queue.length) {
    const path = queue.shift()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const answer = await page.goto(path);
    if (!answer || answer.status() === 403 || answer.status() === 404) continue; // not this role's page
    expect(answer.status(), path).toBeLessThan(400);
    await hydrated(page);
    for (const { text, where } of await pageWords(page)) {
      const words = strangers(text);
      if (words.length) found.push(`${path} ${where}: ${words.join(' ')} — "${text.slice(0, 100)}"`);
    }
    // Nothing wider than the window, on a desktop and on a phone: no sideways scrolling of the page.
    for (const width of [390, DESKTOP.width]) {
      await page.setViewportSize({ width, height: DESKTOP.height });
      const scrolled = await page.evaluate(() => document.documentElement.scrollWidth);
      if (scrolled > width) wide.push(`${path} at ${width} px is ${scrolled} px wide`);
    }
    for (const href of await page.$$eval('a[href]', (as) => as.map((a) => a.getAttribute('href')!))) {
      const kind = DETAILS.exec(href)?.[1];
      if (!kind || seen.has(href) || queue.includes(href) || (perKind.get(kind) ?? 0) >= PER_KIND) continue;
      perKind.set(kind, (perKind.get(kind) ?? 0) + 1);
      queue.push(href);
    }
  }
  return { found: [...new Set(found)], kinds: [...perKind.keys()], wide };
}

const ROLES = ['sato', 'ito', 'suzuki', 'takahashi', 'tanaka', 'admin'];
const DESKTOP = { width: 1366, height: 768 };

for (const who of ROLES) {
  test(`${who} reads every page in Japanese without a word of English`, async ({ page, violations }) => {
    test.setTimeout(300_000);
    await page.setViewportSize(DESKTOP);
    await signIn(page, who);
    const { found, kinds, wide } = await walk(page, notJapanese);
    expect(found, 'English on Japanese pages').toEqual([]);
    expect(wide, 'pages wider than the window').toEqual([]);
    for (const kind of MUST_REACH[who] ?? []) expect(kinds, `a /${kind}/… page (the other tests make them)`).toContain(kind);
  });

  test(`${who} reads every page in English without a word of Japanese`, async ({ page, context, violations }) => {
    test.setTimeout(300_000);
    await signIn(page, who);
    await page.setViewportSize(DESKTOP);
    await context.addCookies([{ name: 'lang', value: 'en', url: new URL(page.url()).origin }]);
    const { found, wide } = await walk(page, notEnglish);
    expect(found, 'Japanese on English pages').toEqual([]);
    expect(wide, 'pages wider than the window').toEqual([]);
  });
}
