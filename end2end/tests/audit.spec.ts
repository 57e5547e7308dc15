import { test, expect, signIn, hydrated, expectAccessible } from './support';

// The auditor reads the whole trail with diffs, sees the chain is intact and may export it.
test('an auditor filters the trail by process, reads the diffs and finds the exports', async ({ page, violations }) => {
  await signIn(page, 'tanaka');
  await page.goto('/audit');
  await hydrated(page);
  await expect(page.getByTestId('chain-status')).toContainText('ハッシュチェーンは完全です');
  await page.getByLabel('プロセス ID').fill('ORD-1002');
  await page.getByRole('button', { name: '絞り込む' }).click();
  await expect(page).toHaveURL(/process_id=ORD-1002/);
  const events = page.getByTestId('audit-events');
  // Each action by its name, its code the name's tooltip.
  await expect(events.locator('span[title="step.reconciled"]').first()).toBeVisible();
  await expect(events.locator('dd.changed').first()).toBeVisible();
  // Recorded values in words, the stored code as a tooltip.
  await expect(events.locator('dd span[title="not_executed"]').first()).toContainText('未実行');
  await expect(page.getByTestId('exports').getByRole('link', { name: 'CSV' })).toHaveAttribute('href', /format=csv&process_id=ORD-1002/);
  const [saved] = await Promise.all([
    page.waitForEvent('download'),
    page.getByTestId('exports').getByRole('link', { name: 'CSV' }).click(),
  ]);
  expect(saved.suggestedFilename()).toMatch(/^audit-.*\.csv$/);
  await expect(page.getByTestId('export-progress').first()).toContainText('保存しました');
  // How many events the file holds, from its trailer, and its size in readable units.
  await expect(page.getByTestId('export-progress').first()).toContainText(/\d+ 件・\d+(\.\d)? (B|KB|MB)/);
  // One event proven alone: its Merkle inclusion proof, checked in the browser, and the proof to download.
  await events.getByTestId('prove-event').first().click();
  const proof = page.getByTestId('event-proof');
  await expect(proof).toContainText(/✓ イベント #\d+ は、\d+ 件の監査証跡の木に含まれます/);
  const proofHref = await proof.getByRole('link').getAttribute('href');
  const proven = await (await page.request.get(proofHref!)).json();
  expect(proven.tree_size).toBeGreaterThanOrEqual(proven.seq);
  expect(proven.proof.length).toBeLessThanOrEqual(Math.ceil(Math.log2(proven.tree_size)));
  await page.screenshot({ path: '../docs/screenshots/audit.png', fullPage: true });
  await expectAccessible(page, 'the audit page');
  // On a phone, in both languages: each event a card, each field named, nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  const origin = new URL(page.url()).origin;
  for (const [lang, label, value] of [['ja', '日時', '未実行'], ['en', 'Time', 'Not executed']]) {
    await page.context().addCookies([{ name: 'lang', value: lang, url: origin }]);
    await page.reload();
    await hydrated(page);
    await expect(events.locator('td').nth(1)).toHaveAttribute('data-label', label);
    await expect(events.locator('dd span[title="not_executed"]').first()).toContainText(value);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: `../docs/screenshots/audit-phone-${lang}.png`, fullPage: true });
    await expectAccessible(page, `the audit page on a phone (${lang})`);
  }
  await page.context().addCookies([{ name: 'lang', value: 'ja', url: origin }]);
  await page.setViewportSize({ width: 1280, height: 900 });

  // The filters are choices in words: the catalogue's actions, the people by name, dates from a picker.
  // Sign-ins are folded away until asked for.
  await page.goto('/audit');
  await hydrated(page);
  await expect(page.getByTestId('routine-folded')).toBeVisible();
  const signIns = page.getByTestId('audit-events').locator('span[title="sign_in.succeeded"]');
  await expect(signIns).toHaveCount(0);
  await page.getByLabel('実行者').selectOption({ label: '田中 健 (tanaka)' });
  await page.getByTestId('show-routine').check();
  await page.getByRole('button', { name: '絞り込む' }).click();
  await expect(page).toHaveURL(/actor=tanaka/);
  await expect(signIns.first()).toBeVisible();
  await expect(page.getByTestId('audit-events')).toContainText('田中 健');
  await page.getByLabel('操作', { exact: true }).selectOption('rerun_request.approved');
  await page.getByLabel('期間（から）').fill('2020-01-01');
  await page.getByRole('button', { name: '絞り込む' }).click();
  await expect(page).toHaveURL(/action=rerun_request.approved/);
  await expect(page).toHaveURL(/from=2020-01-01/);

  const download = await page.request.get('/audit/export?format=jsonl&process_id=ORD-1002');
  expect(download.status()).toBe(200);
  const lines = (await download.text()).trim().split('\n');
  expect(JSON.parse(lines[lines.length - 1]).trailer.filter.process_id).toBe('ORD-1002');

  await page.goto('/operations/ORD-1002');
  await hydrated(page);
  const href = await page.getByTestId('evidence-bundle').getAttribute('href');
  const bundle = await page.request.get(href!);
  expect(bundle.status()).toBe(200);
  expect(bundle.headers()['content-type']).toBe('application/zip');
});

test('staff see only their department in the trail and cannot export', async ({ page, violations }) => {
  await signIn(page, 'ito');
  await page.goto('/audit');
  await hydrated(page);
  await expect(page.getByTestId('exports')).toHaveCount(0);
  const departments = await page.getByTestId('audit-events').locator('tbody tr td:nth-child(6)').allTextContents();
  expect(departments.every((d) => d === '経理部')).toBe(true);
  expect((await page.request.get('/audit/export?format=csv')).status()).toBe(403);
});
