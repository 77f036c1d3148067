import { parse } from 'yaml';
import {
  MAX_PRICE_DECIMALS,
  MICROS,
  divRound,
  formatDecimal,
  formatScaled,
  parseDecimal,
  type Decimal,
} from './decimal';

/** The price list usage is billed with (`PRICES_FILE`, docs/billing.md). */
export interface PriceList {
  /** ISO 4217 code. */
  currency: string;
  /** Decimals of the currency's minor unit: 2 for USD and EUR, 0 for JPY. */
  minorDigits: number;
  /** One machine for one second, per machine type; `default` prices the types not listed. */
  perMachineSecond: ReadonlyMap<string, Decimal>;
  /** One GB (10^9 bytes) kept for one month (730 hours). */
  perGbMonth: Decimal;
}

export const DEFAULT_MACHINE_TYPE = 'default';

/** A price list file's content; values are decimal strings (or plain numbers, read as written). */
export interface PriceListSource {
  currency: string;
  per_machine_second: Record<string, string>;
  storage_per_gb_month: string;
}

/** Used without PRICES_FILE. Machine types other than cpu and gpu cost what a GPU costs. */
export const DEFAULT_PRICE_SOURCE: PriceListSource = {
  currency: 'USD',
  per_machine_second: { cpu: '0.00002', gpu: '0.0008', [DEFAULT_MACHINE_TYPE]: '0.0008' },
  storage_per_gb_month: '0.02',
};

const KEYS = ['currency', 'per_machine_second', 'storage_per_gb_month'];

/**
 * Reads a price list written in JSON or YAML. Scalars are kept as the text written (YAML's
 * failsafe schema), so `0.0008` is never a binary float. Throws naming every problem.
 */
export function parsePriceList(text: string): PriceList {
  let source: unknown;
  try {
    source = parse(text, { schema: 'failsafe' });
  } catch (err) {
    throw new Error(`not JSON or YAML (${(err as Error).message.split('\n')[0]})`);
  }
  return priceListOf(source);
}

export function priceListOf(source: unknown): PriceList {
  const problems: string[] = [];
  if (!isRecord(source))
    throw new Error('expected an object with currency, per_machine_second, storage_per_gb_month');
  for (const key of Object.keys(source))
    if (!KEYS.includes(key)) problems.push(`unknown key "${key}" (expected ${KEYS.join(', ')})`);

  const currency = typeof source.currency === 'string' ? source.currency : '';
  const minorDigits = minorDigitsOf(currency);
  if (minorDigits === undefined)
    problems.push(`currency: expected an ISO 4217 code such as USD, got "${currency}"`);

  const price = (where: string, value: unknown): Decimal => {
    const d = typeof value === 'string' ? parseDecimal(value) : null;
    if (!d)
      problems.push(
        `${where}: expected a non-negative decimal with at most ${MAX_PRICE_DECIMALS} decimals, got ${JSON.stringify(value ?? null)}`,
      );
    return d ?? { units: 0n, scale: 0 };
  };

  const perMachineSecond = new Map<string, Decimal>();
  const machines = source.per_machine_second;
  if (!isRecord(machines)) {
    problems.push('per_machine_second: expected an object mapping machine types to prices');
  } else {
    for (const [type, value] of Object.entries(machines)) {
      if (!/^[\w.-]{1,64}$/.test(type))
        problems.push(`per_machine_second: "${type}" is not a machine type name`);
      perMachineSecond.set(type, price(`per_machine_second.${type}`, value));
    }
    if (!perMachineSecond.has(DEFAULT_MACHINE_TYPE))
      problems.push(
        `per_machine_second.${DEFAULT_MACHINE_TYPE}: required (the price of machine types not listed)`,
      );
  }
  const perGbMonth = price('storage_per_gb_month', source.storage_per_gb_month);

  if (problems.length) throw new Error(problems.join('; '));
  return { currency, minorDigits: minorDigits!, perMachineSecond, perGbMonth };
}

export const DEFAULT_PRICES: PriceList = priceListOf(DEFAULT_PRICE_SOURCE);

/** The price of one machine-second of `machineType`. */
export function machinePrice(prices: PriceList, machineType: string): Decimal {
  return prices.perMachineSecond.get(machineType) ?? prices.perMachineSecond.get(DEFAULT_MACHINE_TYPE)!;
}

/**
 * Where the price list and the machine types (MACHINE_TYPES_FILE) disagree: types priced but
 * not defined (no model can use them), and types defined but not priced (billed at `default`).
 */
export function priceListGaps(
  prices: PriceList,
  defined: Iterable<string>,
): { pricedNotDefined: string[]; definedNotPriced: string[] } {
  const types = new Set(defined);
  return {
    pricedNotDefined: [...prices.perMachineSecond.keys()].filter(
      (t) => t !== DEFAULT_MACHINE_TYPE && !types.has(t),
    ),
    definedNotPriced: [...types].filter((t) => !prices.perMachineSecond.has(t)),
  };
}

function minorDigitsOf(code: string): number | undefined {
  if (!/^[A-Z]{3}$/.test(code) || !Intl.supportedValuesOf('currency').includes(code)) return undefined;
  return new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions()
    .maximumFractionDigits;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** What a job's cost is made of (columns the job rows always carry). */
export interface CostFacts {
  machineType: string;
  machineCount: number;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Set when it ended: its run time, exact to the microsecond (PostgreSQL's interval as float8). */
  runSeconds: number | null;
}

export interface JobCost {
  /** Decimal string with two more digits than the currency's minor unit (USD: `0.0123`). */
  amount: string;
  currency: string;
  /** False while the job may still run: the amount so far. */
  final: boolean;
}

/**
 * A job's cost: machine price per second x machine count x run time, rounded half up once to
 * two digits past the minor unit (a cent's hundredths), from the fields already on the row, so a
 * list prices its jobs without another query. A job that never ran costs nothing.
 */
export function jobCost(prices: PriceList, job: CostFacts, now = Date.now()): JobCost {
  const final = job.finishedAt !== null;
  let micros = 0n;
  if (job.startedAt !== null) {
    micros = final
      ? BigInt(Math.round((job.runSeconds ?? 0) * 1e6))
      : BigInt(Math.max(0, now - job.startedAt.getTime())) * 1000n;
  }
  const price = machinePrice(prices, job.machineType);
  const scale = prices.minorDigits + 2;
  const units = divRound(
    micros * BigInt(job.machineCount) * price.units * 10n ** BigInt(scale),
    MICROS * 10n ** BigInt(price.scale),
  );
  return { amount: formatScaled(units, scale), currency: prices.currency, final };
}

/** The price list as PostgreSQL's jsonb of decimal strings by machine type (`default` among them). */
export function machinePricesJson(prices: PriceList): string {
  return JSON.stringify(
    Object.fromEntries([...prices.perMachineSecond].map(([type, d]) => [type, formatDecimal(d)])),
  );
}
