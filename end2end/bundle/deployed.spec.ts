import { test, expect, hydrated } from '../tests/support';

// A bundle unpacked far from the checkout and started as DEPLOY.md says (scripts/bundle-test.sh).
test('a deployed bundle serves a styled sign-in page whose files all arrive, and it hydrates',
  async ({ page, violations }) => {
    const failed: string[] = [];
    const site: string[] = [];
    page.on('response', (response) => {
      const path = new URL(response.url()).pathname;
      if (!path.startsWith('/pkg/')) return;
      site.push(path);
      if (response.status() >= 400) failed.push(`${response.status()} ${path}`);
    });
    page.on('requestfailed', (request) => failed.push(`${request.failure()?.errorText} ${request.url()}`));

    await page.goto('/sign-in');
    await hydrated(page);

    // The stylesheet is the site's own (hashed name) and applies: its variables and the body without margin.
    const sheet = await page.evaluate(() => {
      const own = [...document.styleSheets].find((s) => s.href?.includes('/pkg/'));
      return own ? { href: own.href, rules: own.cssRules.length } : null;
    });
    expect(sheet, 'the page links the site stylesheet').not.toBeNull();
    expect(sheet!.href).toMatch(/\/pkg\/rerun-gate\.[A-Za-z0-9_-]{22}\.css$/);
    expect(sheet!.rules).toBeGreaterThan(50);
    expect(await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--ink').trim()))
      .toBe('#1d2430');
    expect(await page.evaluate(() => getComputedStyle(document.body).marginTop)).toBe('0px');

    expect(site.some((path) => path.endsWith('.wasm')), 'the wasm bundle was fetched').toBe(true);
    expect(failed, 'site files that did not arrive').toEqual([]);
  });

test('the first admin, added as DEPLOY.md says, signs in through the hydrated page', async ({ page, violations }) => {
  await page.goto('/sign-in');
  await hydrated(page);
  await page.getByLabel('サインイン名').fill('admin');
  await page.getByLabel('パスワード').fill(process.env.ADMIN_PASSWORD ?? '');
  await page.getByRole('button', { name: 'サインイン' }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('user-name')).toHaveText('管理者');
});
