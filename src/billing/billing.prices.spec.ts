import { DEFAULT_PRICES, machinePrice, parsePriceList, priceListGaps } from './billing.prices';

describe('price lists', () => {
  it('has a built-in default in USD with cpu, gpu and a default for other machine types', () => {
    expect(DEFAULT_PRICES.currency).toBe('USD');
    expect(DEFAULT_PRICES.minorDigits).toBe(2);
    expect(machinePrice(DEFAULT_PRICES, 'cpu')).toEqual({ units: 2n, scale: 5 });
    expect(machinePrice(DEFAULT_PRICES, 'gpu')).toEqual({ units: 8n, scale: 4 });
    expect(machinePrice(DEFAULT_PRICES, 'tpu-v5')).toEqual(machinePrice(DEFAULT_PRICES, 'gpu'));
    expect(DEFAULT_PRICES.perGbMonth).toEqual({ units: 2n, scale: 2 });
  });

  it('reads YAML, keeping numbers exactly as written', () => {
    const prices = parsePriceList(
      'currency: EUR\nper_machine_second:\n  gpu: 0.0007\n  default: "0.0009"\nstorage_per_gb_month: 0.10\n',
    );
    expect(prices.currency).toBe('EUR');
    expect(machinePrice(prices, 'gpu')).toEqual({ units: 7n, scale: 4 });
    expect(machinePrice(prices, 'cpu')).toEqual({ units: 9n, scale: 4 });
    expect(prices.perGbMonth).toEqual({ units: 10n, scale: 2 });
  });

  it('reads JSON and takes the minor unit from the currency', () => {
    const prices = parsePriceList(
      JSON.stringify({ currency: 'JPY', per_machine_second: { default: '0.1' }, storage_per_gb_month: '3' }),
    );
    expect(prices.minorDigits).toBe(0);
    expect(
      parsePriceList('{"currency": "BHD", "per_machine_second": {"default": 1}, "storage_per_gb_month": 1}')
        .minorDigits,
    ).toBe(3);
  });

  it('names every problem at once', () => {
    const text = JSON.stringify({
      currency: 'euro',
      per_machine_second: { gpu: '-1', cpu: '1e-5', 'bad name!': '1' },
      storage: '0.1',
    });
    let message = '';
    try {
      parsePriceList(text);
    } catch (err) {
      message = (err as Error).message;
    }
    for (const part of [
      'unknown key "storage"',
      'currency: expected an ISO 4217 code such as USD, got "euro"',
      'per_machine_second.gpu: expected a non-negative decimal',
      'per_machine_second.cpu: expected a non-negative decimal',
      '"bad name!" is not a machine type name',
      'per_machine_second.default: required',
      'storage_per_gb_month: expected a non-negative decimal',
    ])
      expect(message).toContain(part);
  });

  it('refuses what is not a price list', () => {
    expect(() => parsePriceList('{ nope')).toThrow(/not JSON or YAML/);
    expect(() => parsePriceList('- a\n- b\n')).toThrow(/expected an object/);
    expect(() => parsePriceList('currency: USD\ncurrency: EUR\n')).toThrow(/not JSON or YAML/);
    expect(() => parsePriceList('currency: USD\nper_machine_second: 5\nstorage_per_gb_month: 1\n')).toThrow(
      /per_machine_second: expected an object/,
    );
  });

  it('names the machine types priced but not defined, and defined but not priced', () => {
    expect(priceListGaps(DEFAULT_PRICES, ['cpu', 'a100'])).toEqual({
      pricedNotDefined: ['gpu'],
      definedNotPriced: ['a100'],
    });
    expect(priceListGaps(DEFAULT_PRICES, ['cpu', 'gpu'])).toEqual({
      pricedNotDefined: [],
      definedNotPriced: [],
    });
  });
});
