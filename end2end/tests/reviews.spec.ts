import { test, expect, signIn, hydrated, expectAccessible } from './support';

test('the owner opens the week’s review, sees the indicators and their charts, and signs it off', async ({ page, violations }) => {
  await signIn(page, 'suzuki');
  await page.getByRole('link', { name: '振り返り' }).click();
  await expect(page).toHaveURL(/\/reviews$/);
  await hydrated(page);
  // The demo's stalled cases happened this week.
  await expect(page.getByTestId('indicators').locator('tbody tr')).toHaveCount(9);
  await expect(page.getByTestId('indicator-stalled').getByTestId('value')).not.toHaveText('0');

  // One department's review (the filter is a plain GET form: it works before hydration too).
  await page.getByLabel('部門').selectOption('sales');
  await page.getByRole('button', { name: '表示', exact: true }).click();
  await expect(page).toHaveURL(/department=sales/);
  await expect(page.getByTestId('review-period')).toContainText('営業部');
  await expect(page.getByTestId('indicator-double_send_flags').locator('td').nth(2)).toHaveText('0');

  // The charts are images drawn on the server: each has loaded and has a text alternative.
  for (const name of ['rates', 'counts', 'latency']) {
    const chart = page.getByTestId(`chart-${name}`);
    await expect(chart).toHaveAttribute('alt', /.+/);
    await expect.poll(() => chart.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBeGreaterThan(0);
  }
  const svg = await page.request.get((await page.getByTestId('chart-counts').getAttribute('src'))!);
  expect(svg.headers()['content-type']).toContain('image/svg+xml');
  expect(await svg.text()).toContain('停止したオペレーション');
  await expectAccessible(page, 'the review page');

  await page.getByLabel('コメント').fill('停止はすべて対応済み。二重送信なし。');
  await page.getByRole('button', { name: 'この期間を確認済みにする' }).click();
  await expect(page.getByTestId('signoff')).toContainText('鈴木 一郎');
  await page.screenshot({ path: '../docs/screenshots/review.png', fullPage: true });

  const [saved] = await Promise.all([page.waitForEvent('download'), page.getByTestId('review-csv').click()]);
  expect(saved.suggestedFilename()).toBe('rerun-gate-review.csv');
});
