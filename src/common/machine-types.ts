import { parse } from 'yaml';

/**
 * Machine types (`MACHINE_TYPES_FILE`, docs/executors.md): the names a model's `machine_type` may
 * take, and what each means on each executor. A configuration contract, like the variable names:
 *
 *   machine_types:
 *     a100:
 *       description: one NVIDIA A100
 *       slurm: { partition: gpu, gres: "gpu:a100:1", cpus: 8, memory: 64G, account: ml, qos: normal }
 *       kubernetes: { resources: ..., nodeSelector: ..., tolerations: [...] }
 */
export interface SlurmMachine {
  partition?: string;
  gres?: string;
  cpus?: number;
  memory?: string;
  account?: string;
  qos?: string;
}

export interface MachineType {
  description?: string;
  slurm?: SlurmMachine;
  /** The Kubernetes executor's part (resources, nodeSelector, tolerations), kept as written. */
  kubernetes?: Record<string, unknown>;
}

export type MachineTypes = ReadonlyMap<string, MachineType>;

/** The names of machine types, as models and price lists write them. */
export const MACHINE_TYPE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const TYPE_KEYS = ['description', 'slurm', 'kubernetes'];
const SLURM_KEYS = ['partition', 'gres', 'cpus', 'memory', 'account', 'qos'];
/** Values passed to sbatch as `--name=value`: one word of printable characters. */
const SLURM_WORD = /^[\w.:=+@/-]{1,200}$/;

/** Reads a machine types file written in JSON or YAML; throws naming every problem. */
export function parseMachineTypes(text: string): MachineTypes {
  let source: unknown;
  try {
    source = parse(text);
  } catch (err) {
    throw new Error(`not JSON or YAML (${(err as Error).message.split('\n')[0]})`);
  }
  const problems: string[] = [];
  if (!isRecord(source) || !isRecord(source.machine_types))
    throw new Error('expected an object with `machine_types`, mapping each machine type to its meaning');
  for (const key of Object.keys(source))
    if (key !== 'machine_types') problems.push(`unknown key "${key}" (expected machine_types)`);
  const types = new Map<string, MachineType>();
  for (const [name, raw] of Object.entries(source.machine_types)) {
    const at = `machine_types.${name}`;
    if (!MACHINE_TYPE_NAME.test(name)) problems.push(`${at}: not a machine type name`);
    const value = raw ?? {};
    if (!isRecord(value)) {
      problems.push(`${at}: expected an object`);
      continue;
    }
    for (const key of Object.keys(value))
      if (!TYPE_KEYS.includes(key))
        problems.push(`${at}: unknown key "${key}" (expected ${TYPE_KEYS.join(', ')})`);
    const type: MachineType = {};
    if (value.description !== undefined) {
      if (typeof value.description !== 'string') problems.push(`${at}.description: expected text`);
      else type.description = value.description;
    }
    if (value.slurm !== undefined) type.slurm = slurmPart(`${at}.slurm`, value.slurm, problems);
    if (value.kubernetes !== undefined) {
      if (!isRecord(value.kubernetes)) problems.push(`${at}.kubernetes: expected an object`);
      else type.kubernetes = value.kubernetes;
    }
    types.set(name, type);
  }
  if (problems.length) throw new Error(problems.join('; '));
  return types;
}

function slurmPart(at: string, value: unknown, problems: string[]): SlurmMachine | undefined {
  if (!isRecord(value)) {
    problems.push(`${at}: expected an object`);
    return undefined;
  }
  const part: SlurmMachine = {};
  for (const [key, v] of Object.entries(value)) {
    if (!SLURM_KEYS.includes(key)) {
      problems.push(`${at}: unknown key "${key}" (expected ${SLURM_KEYS.join(', ')})`);
    } else if (key === 'cpus') {
      if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 100_000)
        problems.push(`${at}.cpus: expected a whole number of CPUs`);
      else part.cpus = v as number;
    } else if (typeof v !== 'string' && typeof v !== 'number') {
      problems.push(`${at}.${key}: expected a value such as ${key === 'memory' ? '64G' : 'gpu'}`);
    } else if (!SLURM_WORD.test(String(v))) {
      problems.push(
        `${at}.${key}: "${String(v)}" is not a Slurm value (letters, digits and _ . : = + @ / -)`,
      );
    } else {
      part[key as Exclude<keyof SlurmMachine, 'cpus'>] = String(v);
    }
  }
  return part;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
