// The Share dialog is modal for the keyboard (issue 30): Tab and Shift+Tab stay inside it while
// it is open, Esc closes it wherever the focus is, and the focus goes back to the Share button
// (on a phone, to the "⋯" that holds it).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest } from './harness.mjs';

const why = missing();

describe('the Share dialog and the keyboard', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  const inDialog = (page) => page.evaluate(() => !!document.activeElement?.closest('[data-testid="share-dialog"]'));
  const focused = (page) => page.evaluate(() => document.activeElement?.dataset.testid || document.activeElement?.tagName);

  async function tabsStayInside(page) {
    for (const key of ['Tab', 'Tab', 'Tab', 'Tab', 'Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab']) {
      await page.keyboard.press(key);
      assert.ok(await inDialog(page), `${key} left the dialog for ${await focused(page)}`);
    }
  }

  for (const [device, options, back] of [
    ['a desktop', { viewport: { width: 1440, height: 900 } }, 'share'],
    ['a phone', { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }, 'head-more'],
  ]) {
    test(`on ${device}, Tab stays in the dialog, Esc closes it (even after Unshare) and the focus returns to ${back}`, async () => {
      const { data: s } = await rest(server, 'POST', '/session', { title: `focus on ${device}` });
      const page = await loggedInPage(browser, server, options);
      await page.goto(`${server.base}/#/session/${s.id}`);
      await page.getByTestId('session-title').waitFor();
      if (back === 'head-more') await page.getByTestId('head-more').click();
      await page.getByTestId('share').click();
      await page.getByTestId('share-dialog').waitFor();
      assert.equal(await focused(page), 'share-create');
      await tabsStayInside(page);
      await page.keyboard.press('Escape');
      await page.getByTestId('share-dialog').waitFor({ state: 'detached' });
      assert.equal(await focused(page), back);

      // Opened again, shared, then unshared: the Unshare button goes away under the focus, and
      // the keyboard still belongs to the dialog.
      if (back === 'head-more') await page.getByTestId('head-more').click();
      await page.getByTestId('share').click();
      await page.getByTestId('share-create').click();
      await page.getByTestId('share-url').waitFor();
      await tabsStayInside(page);
      await page.getByTestId('unshare').click();
      await page.getByTestId('share-create').waitFor();
      await tabsStayInside(page);
      await page.keyboard.press('Escape');
      await page.getByTestId('share-dialog').waitFor({ state: 'detached' });
      assert.equal(await focused(page), back);
      assert.deepEqual(page.errors, []);
      await page.context().close();
    });
  }
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
