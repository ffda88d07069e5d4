import { describe, expect, it } from 'vitest';
import { BootBudget } from '../../src/runtime/local/boot-budget.js';

describe('BootBudget', () => {
  it('gives 15 s until boots show the host needs more', () => {
    const budget = new BootBudget();
    expect(budget.ms).toBe(15_000);
    budget.record(120);
    budget.record(900);
    expect(budget.ms).toBe(15_000);
  });

  it('grows with slow boots, to five times the slowest, at most two minutes', () => {
    const budget = new BootBudget();
    budget.record(4_000);
    expect(budget.ms).toBe(20_000);
    budget.record(3_000.2);
    expect(budget.ms).toBe(20_000);
    budget.record(60_000);
    expect(budget.ms).toBe(120_000);
  });

  it('forgets a slow burst after twenty quick boots', () => {
    const budget = new BootBudget();
    budget.record(8_000);
    for (let i = 0; i < 19; i++) budget.record(200);
    expect(budget.ms).toBe(40_000);
    budget.record(200);
    expect(budget.ms).toBe(15_000);
  });
});
