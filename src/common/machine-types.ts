import type { V1Toleration } from '@kubernetes/client-node';
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
  /** The Kubernetes executor's part: the pod's resources, node selector and tolerations. */
  kubernetes?: KubernetesMachineType;
}

/** The `kubernetes` part of a machine type in MACHINE_TYPES_FILE. */
export interface KubernetesMachineType {
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
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
      try {
        type.kubernetes = parseKubernetesMachineType(value.kubernetes, `${at}.kubernetes`);
      } catch (err) {
        problems.push((err as Error).message);
      }
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

const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i?|[munkMGTPE])?$/;
const TOLERATION_KEYS = new Set(['key', 'operator', 'value', 'effect', 'tolerationSeconds']);

/**
 * Checks a machine type's `kubernetes` part as read from MACHINE_TYPES_FILE and gives it in the
 * form the manifest uses (quantities as strings). Every problem is reported, prefixed by `where`.
 */
export function parseKubernetesMachineType(raw: unknown, where: string): KubernetesMachineType {
  const problems: string[] = [];
  const bad = (at: string, what: string) => problems.push(`${where}.${at}: ${what}`);
  const out: KubernetesMachineType = {};
  if (!isRecord(raw)) throw new Error(`${where}: expected a mapping`);
  for (const key of Object.keys(raw))
    if (!['resources', 'nodeSelector', 'tolerations'].includes(key))
      bad(key, 'unknown key (resources, nodeSelector, tolerations)');
  if (raw.resources !== undefined) {
    if (!isRecord(raw.resources)) bad('resources', 'expected a mapping');
    else {
      out.resources = {};
      for (const [kind, list] of Object.entries(raw.resources)) {
        if (kind !== 'requests' && kind !== 'limits') {
          bad(`resources.${kind}`, 'unknown key (requests, limits)');
          continue;
        }
        if (!isRecord(list)) {
          bad(`resources.${kind}`, 'expected a mapping of resource names to quantities');
          continue;
        }
        const quantities: Record<string, string> = {};
        for (const [name, value] of Object.entries(list)) {
          const text = typeof value === 'number' ? String(value) : value;
          if (typeof text !== 'string' || !QUANTITY.test(text))
            bad(`resources.${kind}.${name}`, `"${String(value)}" is not a quantity (e.g. 2, 500m, 64Gi)`);
          else quantities[name] = text;
        }
        out.resources[kind] = quantities;
      }
    }
  }
  if (raw.nodeSelector !== undefined) {
    if (!isRecord(raw.nodeSelector) || !Object.values(raw.nodeSelector).every((v) => typeof v === 'string'))
      bad('nodeSelector', 'expected a mapping of label names to string values');
    else out.nodeSelector = raw.nodeSelector as Record<string, string>;
  }
  if (raw.tolerations !== undefined) {
    if (!Array.isArray(raw.tolerations)) bad('tolerations', 'expected a list');
    else {
      out.tolerations = [];
      raw.tolerations.forEach((t: unknown, i) => {
        const at = `tolerations[${i}]`;
        if (!isRecord(t)) return bad(at, 'expected a mapping');
        const unknown = Object.keys(t).filter((k) => !TOLERATION_KEYS.has(k));
        if (unknown.length) bad(at, `unknown key(s) ${unknown.join(', ')}`);
        if (t.operator !== undefined && t.operator !== 'Exists' && t.operator !== 'Equal')
          bad(`${at}.operator`, 'expected Exists or Equal');
        if (
          t.effect !== undefined &&
          !['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(String(t.effect))
        )
          bad(`${at}.effect`, 'expected NoSchedule, PreferNoSchedule or NoExecute');
        for (const k of ['key', 'value'] as const)
          if (t[k] !== undefined && typeof t[k] !== 'string') bad(`${at}.${k}`, 'expected a string');
        if (t.tolerationSeconds !== undefined && !Number.isSafeInteger(t.tolerationSeconds))
          bad(`${at}.tolerationSeconds`, 'expected an integer');
        out.tolerations!.push(t as V1Toleration);
      });
    }
  }
  if (problems.length) throw new Error(problems.join('; '));
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
