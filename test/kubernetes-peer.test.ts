import { expand, parseQuantity, schedule, type PeerNode } from './helpers/kubernetes-peer-kubelet';
import { parseSelector } from './helpers/kubernetes-peer';

/**
 * The Kubernetes test peer must behave as Kubernetes does where the executor's correctness
 * depends on it: `$(VAR)` expansion (the escaping of argv is tested through it), label
 * selectors, quantities and the scheduler's words.
 */

describe('the peer’s $(VAR) expansion, as k8s.io/kubernetes third_party/forked/golang/expansion', () => {
  const vars: Record<string, string> = { VAR_A: 'A', VAR_B: 'B', VAR_EMPTY: '', DOLLAR: '$' };
  const lookup = (name: string) => vars[name];
  it.each([
    ['$(VAR_A)', 'A'],
    ['___$(VAR_A)___', '___A___'],
    ['$(VAR_A)-$(VAR_B)', 'A-B'],
    ['$(VAR_EMPTY)', ''],
    ['$(VAR_DOES_NOT_EXIST)', '$(VAR_DOES_NOT_EXIST)'],
    ['$$(VAR_A)', '$(VAR_A)'],
    ['$$$(VAR_A)', '$A'],
    ['$$$$(VAR_A)', '$$(VAR_A)'],
    ['$$', '$'],
    ['$', '$'],
    ['foo$', 'foo$'],
    ['$VAR_A', '$VAR_A'],
    ['$(VAR_A', '$(VAR_A'],
    ['$()', '$()'],
    ['$(DOLLAR)(VAR_A)', '$(VAR_A)'],
    ['$(VAR_A)$(VAR_A', 'A$(VAR_A'],
    ['$ü', '$ü'],
  ])('%s -> %s', (input, output) => {
    expect(expand(input, lookup)).toBe(output);
  });
});

describe('the peer’s label selectors', () => {
  it.each([
    ['a=b', { a: 'b' }, true],
    ['a==b', { a: 'c' }, false],
    ['a!=b', {}, true],
    ['a', { a: '' }, true],
    ['!a', { a: 'x' }, false],
    ['a in (x, y),b', { a: 'y', b: '1' }, true],
    ['a notin (x)', { a: 'x' }, false],
    [
      'app.kubernetes.io/managed-by=media-platform',
      { 'app.kubernetes.io/managed-by': 'media-platform' },
      true,
    ],
  ])('%s on %j is %s', (selector, labels, result) => {
    expect(parseSelector(selector)!(labels)).toBe(result);
  });

  it('refuses what it cannot parse', () => {
    expect(parseSelector('a=b=c')).toBeNull();
  });
});

describe('the peer’s scheduler', () => {
  it('reads quantities', () => {
    expect(parseQuantity('500m')).toBe(0.5);
    expect(parseQuantity('64Gi')).toBe(64 * 2 ** 30);
    expect(parseQuantity('1G')).toBe(1e9);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity(2)).toBe(2);
    expect(() => parseQuantity('lots')).toThrow(/quantities must match/);
  });

  it('says why no node fits, in the scheduler’s words', () => {
    const nodes: PeerNode[] = [
      { name: 'cpu', capacity: { cpu: '4', memory: '8Gi' } },
      {
        name: 'gpu',
        labels: { pool: 'gpu' },
        capacity: { cpu: '8', 'nvidia.com/gpu': '1' },
        taints: [{ key: 'gpu', effect: 'NoSchedule' }],
      },
    ];
    const none = () => ({});
    const spec = (resources: Record<string, string>, extra = {}) => ({
      containers: [{ name: 'job', image: 'x', resources: { limits: resources } }],
      ...extra,
    });
    expect(schedule(spec({ 'nvidia.com/gpu': '1' }), nodes, none, {})).toEqual({
      message:
        '0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint {gpu: }.',
    });
    expect(
      schedule(
        spec({ 'nvidia.com/gpu': '1' }, { tolerations: [{ key: 'gpu', operator: 'Exists' }] }),
        nodes,
        none,
        {},
      ),
    ).toEqual({ node: 'gpu' });
    expect(schedule(spec({ cpu: '2' }, { nodeSelector: { pool: 'h100' } }), nodes, none, {})).toEqual({
      message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
    });
    expect(schedule(spec({ cpu: '3' }), nodes, () => ({ cpu: 2 }), {})).toEqual({
      message: '0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {gpu: }.',
    });
    expect(
      schedule(
        { ...spec({}), volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'jobs' } }] },
        nodes,
        none,
        {},
      ),
    ).toEqual({ message: '0/2 nodes are available: persistentvolumeclaim "jobs" not found.' });
  });
});
