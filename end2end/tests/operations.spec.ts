import { test, expect, signIn, token, expectAccessible, stalledOperation, hydrated } from './support';

test('a staff user sees only their department\'s stalled operations and opens one', async ({ page, request, violations }) => {
  await stalledOperation(request, 'sales', 'order-intake', 'ORD-E2E-1');
  await stalledOperation(request, 'billing', 'monthly-billing', 'INV-E2E-1');

  await signIn(page, 'sato');
  // The sweeper runs every second in this suite; reload until it has marked the operation.
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId('board')).toContainText('ORD-E2E-1', { timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  await expect(page.getByTestId('board')).not.toContainText('INV-E2E-1');
  await expect(page.getByTestId('event-counts')).toContainText('一時障害');
  await page.screenshot({ path: '../docs/screenshots/board.png', fullPage: true });
  await expectAccessible(page, 'the board');
  // On a phone, in both languages: the operations are cards, each field named, nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  const origin = new URL(page.url()).origin;
  for (const [lang, label] of [['ja', 'プロセス ID'], ['en', 'Process ID']]) {
    await page.context().addCookies([{ name: 'lang', value: lang, url: origin }]);
    await page.reload();
    await hydrated(page);
    const card = page.getByTestId('board').locator('tr', { hasText: 'ORD-E2E-1' });
    await expect(card.locator('td:has(a[href="/operations/ORD-E2E-1"])')).toHaveAttribute('data-label', label);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    // The bell and the other language in sight; the rest behind a button that says it is a menu.
    await expect(page.getByTestId('bell')).toBeVisible();
    await expect(page.getByTestId('language-switch')).toBeVisible();
    const audit = page.getByRole('link', { name: lang === 'ja' ? '監査証跡' : 'Audit trail' });
    await expect(audit).toBeHidden();
    await expect(page.getByTestId('nav-button')).toContainText(lang === 'ja' ? 'メニュー' : 'Menu');
    await page.getByTestId('nav-button').click();
    await expect(audit).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.getByTestId('nav-button').click();
    await expect(audit).toBeHidden();
    await page.screenshot({ path: `../docs/screenshots/board-phone-${lang}.png`, fullPage: true });
    await expectAccessible(page, `the board on a phone (${lang})`);
  }
  await page.context().addCookies([{ name: 'lang', value: 'ja', url: origin }]);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.reload();

  await page.getByRole('link', { name: 'ORD-E2E-1' }).click();
  await expect(page).toHaveURL(/\/operations\/ORD-E2E-1$/);
  await expect(page.getByTestId('operation-status')).toContainText('停止');
  await expect(page.getByTestId('steps')).toContainText('ORD-E2E-1:register_order');
  await expect(page.getByTestId('steps')).toContainText('✕ 失敗');
  await expect(page.getByTestId('guidance')).toContainText('結果を照会する');
  await expect(page.getByTestId('timeline').locator('[title="operation.stalled"]').first()).toContainText('停止を検知');
  await page.screenshot({ path: '../docs/screenshots/operation.png', fullPage: true });
  await expectAccessible(page, 'an operation page');

  // Another department's operation does not exist for this user.
  await page.goto('/operations/INV-E2E-1');
  await expect(page.getByRole('heading', { name: '見つかりません' })).toBeVisible();
});

test('the admin sees the loaded configuration and the API clients', async ({ page, violations }) => {
  await signIn(page, 'admin');
  await page.getByRole('link', { name: '設定' }).click();
  await expect(page.getByTestId('config-workflows')).toContainText('order-intake');
  await expect(page.getByTestId('config-workflows')).toContainText('RERUN_GATE_SECRET_ORDER_INTAKE');
  // The audit signing key, by the fingerprint auditors compare with the public key they keep.
  await expect(page.getByTestId('audit-signing')).toContainText(/鍵の指紋: [0-9a-f]{64}/);
  // The demo's rerun receiver passes the conformance check: five test calls, each expectation met.
  await page.getByTestId('check-receiver').first().click();
  const check = page.getByTestId('receiver-check');
  await expect(check).toContainText('すべての期待を満たしました');
  await expect(check.locator('li.met')).toHaveCount(5);
  await page.screenshot({ path: '../docs/screenshots/receiver-check.png', fullPage: true });
  await page.getByRole('link', { name: 'API クライアント' }).click();
  await expect(page.getByTestId('api-clients')).toContainText('e2e-sales');
});
