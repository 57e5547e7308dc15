import { test as base, expect, APIRequestContext, Locator, Page } from '@playwright/test';
import { readFileSync } from 'fs';
import AxeBuilder from '@axe-core/playwright';

/** Demo users' one-time passwords, written by run.sh from `server demo load`. */
export function password(username: string): string {
  const lines = readFileSync(process.env.CREDENTIALS_FILE ?? '', 'utf8').trim().split('\n');
  const line = lines.find((l) => l.split(' ')[0] === username);
  if (!line) throw new Error(`no demo credentials for ${username}`);
  return line.split(' ')[1];
}

/** The API token of a department, written by run.sh from `server token create`. */
export function token(department: string): string {
  const lines = readFileSync(process.env.TOKENS_FILE ?? '', 'utf8').trim().split('\n');
  const line = lines.find((l) => l.split(' ')[0] === department);
  if (!line) throw new Error(`no token for ${department}`);
  return line.split(' ')[1];
}

/** Every test fails on a Content-Security-Policy violation or an uncaught page error. */
export const test = base.extend<{ violations: string[] }>({
  violations: async ({ page }, use) => {
    const violations: string[] = [];
    await page.exposeFunction('__reportViolation', (v: string) => violations.push(v));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        (window as any).__reportViolation(`${e.violatedDirective} ${e.blockedURI}`));
    });
    page.on('console', (m) => { if (m.text().includes('Content Security Policy')) violations.push(m.text()); });
    page.on('pageerror', (e) => violations.push(`page error: ${e.message}`));
    // A wasm panic reaches `pageerror` only as "unreachable": the console has the message.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) console.log(`console error on ${page.url()}: ${m.text()}`);
    });
    await use(violations);
    expect(violations, 'CSP violations or page errors').toEqual([]);
  },
});

export { expect };

export async function hydrated(page: Page) {
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
}

export async function signIn(page: Page, username: string) {
  await page.goto('/sign-in');
  await hydrated(page);
  await page.getByLabel('サインイン名').fill(username);
  await page.getByLabel('パスワード').fill(password(username));
  await page.getByRole('button', { name: 'サインイン' }).click();
  await expect(page).toHaveURL(/\/$/);
}

/** axe-core on the page as it is now: no serious or critical violation of WCAG 2.1 A/AA. */
export async function expectAccessible(page: Page, name: string) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const serious = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  expect(serious, `axe violations on ${name}`).toEqual([]);
}

/** Presses Tab until the element has the focus (as a keyboard user would reach it), and checks the focus shows. */
export async function tabTo(page: Page, target: Locator, most = 80) {
  for (let i = 0; i < most; i++) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((el) => el === document.activeElement)) {
      const outline = await target.evaluate((el) => getComputedStyle(el).outlineStyle);
      expect(outline, 'a visible focus outline').not.toBe('none');
      return;
    }
  }
  throw new Error(`Tab never reached ${target}`);
}

const STEPS: Record<string, string[]> = {
  'order-intake': ['register_order', 'ai_summary'],
  'monthly-billing': ['draft_invoice', 'send_mail', 'issue_invoice'],
};

/** Registers an operation through the ingestion API and fails its first step, so the sweeper stalls it. */
export async function stalledOperation(request: APIRequestContext, department: string, workflow: string, processId: string) {
  const headers = { authorization: `Bearer ${token(department)}` };
  const steps = STEPS[workflow].map((name) => ({ name, idempotency_key: `${processId}:${name}` }));
  const registered = await request.post('/api/v1/operations', {
    headers: { ...headers, 'idempotency-key': processId },
    data: { process_id: processId, workflow, department, business_key: `BK-${processId}`, steps },
  });
  expect(registered.status()).toBe(201);
  const failed = await request.post(`/api/v1/operations/${processId}/steps/${steps[0].name}/events`, {
    headers,
    data: { seq: 1, type: 'failed', error: { class: 'server_error', message: '503 from the provider' } },
  });
  expect((await failed.json()).applied).toBe(true);
}
