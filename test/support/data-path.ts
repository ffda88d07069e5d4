/**
 * The data path test servers use: the Node router unless `SLIPWAY_TEST_DATA_PATH` says `native`
 * (the native-front-door project of vitest.config.ts runs the router and security suites so).
 */
export function testDataPath(): 'native' | 'node' {
  return process.env.SLIPWAY_TEST_DATA_PATH === 'native' ? 'native' : 'node';
}
