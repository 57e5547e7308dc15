import { test, expect, signIn, hydrated, expectAccessible } from './support';

// A newcomer to the demo: the board points at the seed's partial-success case.
test('the board greets a newcomer with the partial-success case to start from', async ({ page, violations }) => {
  await signIn(page, 'sato');
  const banner = page.getByTestId('start-here');
  await expect(banner).toContainText('はじめに');
  await banner.getByRole('link', { name: '途中まで成功したケースを開く' }).click();
  await expect(page).toHaveURL(/\/operations\/ORD-1002$/);
  await hydrated(page);
  await expect(page.getByTestId('guidance')).toContainText('途中まで成功');
});

// The box is for a board that shows the case: not for the admin, whose board is empty.
test('the admin\'s empty board has no box pointing to a case it does not show', async ({ page, violations }) => {
  await signIn(page, 'admin');
  await expect(page.getByTestId('board-empty')).toBeVisible();
  await expect(page.getByTestId('start-here')).toHaveCount(0);
});

// The language is the reader's: switched in the header, kept in the account, back to Japanese at the end
// (the other tests read Japanese).
test('a reader switches to English, the whole page follows, and switches back on the account page', async ({ page, violations }) => {
  await signIn(page, 'ito');
  await hydrated(page);
  await page.getByTestId('language-switch').click();
  await expect(page.locator('html')).toHaveAttribute('lang', 'en');
  await hydrated(page);
  await expect(page.getByRole('button', { name: 'Sign out' })).toBeVisible();
  await expect(page.getByRole('heading', { level: 1 })).not.toContainText(/[\u3040-\u30ff]/);
  await page.getByRole('link', { name: 'Account' }).click();
  await expect(page).toHaveURL(/\/account$/);
  await hydrated(page);
  await expect(page.getByLabel('Time zone')).toHaveValue('Asia/Tokyo');
  await page.screenshot({ path: '../docs/screenshots/account-en.png', fullPage: true });
  await expectAccessible(page, 'the account page');

  await page.getByLabel('Language', { exact: true }).selectOption('ja');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.locator('html')).toHaveAttribute('lang', 'ja');
  await expect(page.getByRole('heading', { level: 1 })).toContainText('アカウント');
});

test('a visitor switches the sign-in page to English and reads a refusal in English', async ({ page, violations }) => {
  await page.goto('/sign-in');
  await hydrated(page);
  await page.getByTestId('language-switch').click();
  await expect(page.locator('html')).toHaveAttribute('lang', 'en');
  await hydrated(page);
  await page.getByLabel('Sign-in name').fill('sato');
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('alert')).toHaveText(/The sign-in name or the password is wrong\./);
});
