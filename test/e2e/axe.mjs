// axe-core (npm) injected into the page: the automated accessibility check of a screen.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// Evaluated rather than added as a <script>: the UI's Content-Security-Policy (script-src 'self')
// refuses inline scripts, and the check must not loosen what it checks.
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Runs axe on the page and returns its serious and critical violations, each as a readable line. */
export async function seriousViolations(page, context = 'document') {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async (ctx) => {
    const res = await window.axe.run(ctx === 'document' ? document : ctx, { resultTypes: ['violations'] });
    return res.violations;
  }, context);
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.slice(0, 4).map((n) => n.target.join(' ') + (n.failureSummary ? ` (${n.failureSummary.split('\n').slice(1).join(' ').trim()})` : '')).join('; ')}`);
}
