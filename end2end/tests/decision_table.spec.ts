import { test, expect, signIn, hydrated, expectAccessible } from './support';

test('staff open the decision table with its ten events and download it for Excel', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await page.getByRole('link', { name: '判断表' }).click();
  await expect(page).toHaveURL(/\/decision-table$/);
  await hydrated(page);
  const table = page.getByTestId('decision-table');
  await expect(table.locator('tbody tr')).toHaveCount(10);
  await expect(table.locator('tr[data-event="partial_success"]')).toContainText('確認したうえで、要約だけを実行する');
  await expectAccessible(page, 'the decision table');
  const [saved] = await Promise.all([page.waitForEvent('download'), page.getByTestId('decision-table-xlsx').click()]);
  expect(saved.suggestedFilename()).toBe('decision-table.xlsx');
});
