import { expect } from 'vitest';
import { AppError } from '../../src/errors.js';

/** Runs `action` and asserts it fails with an AppError of this status and code; returns the error. */
export async function expectAppError(
  action: () => unknown,
  status: number,
  code: string,
  message?: string | RegExp,
): Promise<AppError> {
  let caught: unknown;
  try {
    await action();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected an AppError to be thrown').toBeInstanceOf(AppError);
  const error = caught as AppError;
  expect({ status: error.status, code: error.code }).toEqual({ status, code });
  if (typeof message === 'string') expect(error.message).toContain(message);
  else if (message) expect(error.message).toMatch(message);
  return error;
}
