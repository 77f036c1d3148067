import { execFileSync } from 'node:child_process';
import type { MachineType } from '../common/machine-types';
import type { JobSpec } from './executor.port';
import {
  arrayIdOf,
  arraySbatchArgs,
  expandJobId,
  jobOptions,
  shellEnvironment,
  shellWords,
  exitOf,
  parseSacct,
  parseSqueue,
  pendingReasonOf,
  phaseOf,
  sbatchArgs,
  splitHostList,
  type SbatchOptions,
} from './slurm.sbatch';

const spec: JobSpec = {
  jobId: '6f1c0a52-8a3b-4f7e-9d55-0c1e2f3a4b5c',
  owner: { type: 'user', id: '0d2f6c1e-3b4a-4c5d-8e9f-a0b1c2d3e4f5' },
  argv: ['upscale', '--in', 'inputs/a.png', '; rm -rf /'],
  env: {},
  container: 'nvcr.io/acme/upscale:2',
  machineType: 'a100',
  machineCount: 2,
  timeoutSeconds: 90,
  inputs: ['inputs/a.png'],
  workDir: '/shared/jobs/6f1c0a52-8a3b-4f7e-9d55-0c1e2f3a4b5c',
  outputDir: '/shared/jobs/6f1c0a52-8a3b-4f7e-9d55-0c1e2f3a4b5c/output',
};

const common = [
  '--parsable',
  '--job-name=media-6f1c0a52-8a3b-4f7e-9d55-0c1e2f3a4b5c',
  '--chdir=/shared/jobs/6f1c0a52-8a3b-4f7e-9d55-0c1e2f3a4b5c',
  '--output=.job/stdout',
  '--error=.job/stderr',
  '--export=ALL',
  '--no-requeue',
  '--nodes=2',
  '--time=2',
];

const types = new Map<string, MachineType>([
  [
    'a100',
    {
      description: 'one NVIDIA A100',
      slurm: { partition: 'gpu', gres: 'gpu:a100:1', cpus: 8, memory: '64G', account: 'ml', qos: 'normal' },
      kubernetes: { resources: { limits: { 'nvidia.com/gpu': '1' } } },
    },
  ],
  ['small', { slurm: { cpus: 1 } }],
  ['anything', {}],
]);

const opts = (more: Partial<SbatchOptions> = {}): SbatchOptions => ({
  script: '/srv/media/src/executors/slurm.job.sh',
  runtime: 'none',
  machineTypes: null,
  programs: { 'media-demo': ['/usr/bin/node', '/srv/media/dist/src/demo-models/media-demo.js'] },
  ...more,
});

describe('sbatchArgs', () => {
  it('passes the argv after the fixed batch script, as it is; the machine type is the partition without a file', () => {
    expect(sbatchArgs(spec, opts())).toEqual([
      ...common,
      '--partition=a100',
      '/srv/media/src/executors/slurm.job.sh',
      'upscale',
      '--in',
      'inputs/a.png',
      '; rm -rf /',
    ]);
  });

  it.each([
    [
      'a100',
      [
        '--partition=gpu',
        '--gres=gpu:a100:1',
        '--cpus-per-task=8',
        '--mem=64G',
        '--account=ml',
        '--qos=normal',
      ],
    ],
    ['small', ['--cpus-per-task=1']],
    ['anything', []],
  ])('gives machine type %s its Slurm options', (machineType, expected) => {
    const args = sbatchArgs({ ...spec, machineType }, opts({ machineTypes: types }));
    expect(args).toEqual([...common, ...expected, '/srv/media/src/executors/slurm.job.sh', ...spec.argv]);
  });

  it("takes the owner's account and the priority's QOS before the machine type's; low gets a nice without one", () => {
    const governance = {
      accounts: { [`user:${spec.owner.id}`]: 'lab-a' },
      defaultAccount: 'shared',
      qos: { high: 'interactive' },
    };
    const withTypes = (priority: 'low' | 'normal' | 'high', g = governance) =>
      sbatchArgs({ ...spec, priority }, opts({ machineTypes: types, governance: g })).filter((a) =>
        /^--(account|qos|nice)=/.test(a),
      );
    expect(withTypes('high')).toEqual(['--account=lab-a', '--qos=interactive']);
    // No QOS for normal: the machine type's; for low, the machine type's QOS and a nice.
    expect(withTypes('normal')).toEqual(['--account=lab-a', '--qos=normal']);
    expect(withTypes('low')).toEqual(['--account=lab-a', '--qos=normal', '--nice=1000']);
    // Another owner: the machine type's account first, else the default.
    const other = { ...governance, accounts: {} };
    expect(withTypes('high', other)).toEqual(['--account=ml', '--qos=interactive']);
    expect(
      sbatchArgs(
        { ...spec, machineType: 'small', priority: 'low' },
        opts({ machineTypes: types, governance: other }),
      ).filter((a) => /^--(account|qos|nice)=/.test(a)),
    ).toEqual(['--account=shared', '--nice=1000']);
  });

  it('refuses a machine type the file does not define', () => {
    expect(() => sbatchArgs({ ...spec, machineType: 'h100' }, opts({ machineTypes: types }))).toThrow(
      'the machine type "h100" is not defined (MACHINE_TYPES_FILE); the job cannot run',
    );
  });

  it.each([
    [
      'pyxis',
      [
        '--container-image=nvcr.io/acme/upscale:2',
        '--container-mounts=/shared/jobs/6f1c0a52-8a3b-4f7e-9d55-0c1e2f3a4b5c',
        '--container-workdir=/shared/jobs/6f1c0a52-8a3b-4f7e-9d55-0c1e2f3a4b5c',
      ],
      spec.argv,
    ],
    ['oci', ['--container=nvcr.io/acme/upscale:2'], spec.argv],
    [
      'apptainer',
      [],
      [
        'apptainer',
        'exec',
        '--bind',
        spec.workDir,
        '--pwd',
        spec.workDir,
        'docker://nvcr.io/acme/upscale:2',
        ...spec.argv,
      ],
    ],
    ['none', [], spec.argv],
  ] as const)('runs the container with the %s runtime', (runtime, options, argv) => {
    expect(sbatchArgs(spec, opts({ runtime, machineTypes: types }))).toEqual([
      ...common,
      '--partition=gpu',
      '--gres=gpu:a100:1',
      '--cpus-per-task=8',
      '--mem=64G',
      '--account=ml',
      '--qos=normal',
      ...options,
      '/srv/media/src/executors/slurm.job.sh',
      ...argv,
    ]);
  });

  it('hands apptainer images that name their source as they are', () => {
    for (const container of ['library://acme/upscale:2', '/images/upscale.sif', 'upscale.sif'])
      expect(sbatchArgs({ ...spec, container }, opts({ runtime: 'apptainer' }))).toContain(container);
  });

  it("runs the service's own programs as they are, in no container, with Slurm's minimum time of a minute", () => {
    const demo = {
      ...spec,
      argv: ['media-demo', 'wordcount', 'inputs/t.txt'],
      container: 'builtin/media-demo',
    };
    for (const runtime of ['none', 'pyxis', 'apptainer', 'oci'] as const)
      expect(sbatchArgs({ ...demo, timeoutSeconds: 5, machineCount: 1 }, opts({ runtime }))).toEqual([
        ...common.slice(0, 7),
        '--nodes=1',
        '--time=1',
        '--partition=a100',
        '/srv/media/src/executors/slurm.job.sh',
        '/usr/bin/node',
        '/srv/media/dist/src/demo-models/media-demo.js',
        'wordcount',
        'inputs/t.txt',
      ]);
  });
});

describe('job arrays', () => {
  it('submits an array in its directory, the files of each task through its entry, no argv on the command line', () => {
    const { options, argv } = jobOptions(spec, opts({ machineTypes: types }));
    expect(argv).toEqual(spec.argv);
    const args = arraySbatchArgs({
      key: 'k1',
      dir: '/shared/jobs/.arrays/k1',
      count: 20,
      limit: 4,
      options,
      arrayScript: '/srv/media/src/executors/slurm.array.sh',
      jobScript: '/srv/media/src/executors/slurm.job.sh',
    });
    expect(args).toEqual([
      '--parsable',
      '--job-name=media-array-k1',
      '--chdir=/shared/jobs/.arrays/k1',
      '--output=%a/.job/stdout',
      '--error=%a/.job/stderr',
      '--array=0-19%4',
      ...common.slice(5),
      '--partition=gpu',
      '--gres=gpu:a100:1',
      '--cpus-per-task=8',
      '--mem=64G',
      '--account=ml',
      '--qos=normal',
      '/srv/media/src/executors/slurm.array.sh',
      '/srv/media/src/executors/slurm.job.sh',
    ]);
    expect(args.join(' ')).not.toContain('rm -rf');
    expect(
      arraySbatchArgs({
        key: 'k',
        dir: '/d',
        count: 3,
        limit: 0,
        options: [],
        arrayScript: 'a',
        jobScript: 'j',
      }),
    ).toContain('--array=0-2');
  });

  it('writes argv and environment files that sh reads back word for word', () => {
    const words = ['plain', "it's", '$(id)', '`id`', 'a\nb', ' spaced ', '', '\\', '"', '%j', '-x', "'"];
    const read = execFileSync('sh', ['-c', 'eval "set -- $(cat)"; printf "%s\\0" "$@"'], {
      input: shellWords(words),
      encoding: 'utf8',
    });
    expect(read.split('\0').slice(0, -1)).toEqual(words);
    const env = { A: "x'y $(id)", B_2: 'line\nbreak', C: '' };
    const shown = execFileSync('sh', ['-c', 'set -a; eval "$(cat)"; set +a; printf "%s|" "$A" "$B_2" "$C"'], {
      input: shellEnvironment(env),
      encoding: 'utf8',
    });
    expect(shown).toBe(`${env.A}|${env.B_2}||`);
    expect(() => shellEnvironment({ 'A-B': 'x' })).toThrow('"A-B"');
  });

  it('reads array task ids, and pending tasks squeue shows collapsed', () => {
    expect(expandJobId('123')).toEqual(['123']);
    expect(expandJobId('123_5')).toEqual(['123_5']);
    expect(expandJobId('556_[0-3%4]')).toEqual(['556_0', '556_1', '556_2', '556_3']);
    expect(expandJobId('557_[1,3,5-7]')).toEqual(['557_1', '557_3', '557_5', '557_6', '557_7']);
    expect(expandJobId('558_[0-8:4]')).toEqual(['558_0', '558_4', '558_8']);
    expect(expandJobId('559_[5-999]')).toHaveLength(995);
    expect(arrayIdOf('123_5')).toBe('123');
    expect(arrayIdOf('123')).toBeNull();
    expect(arrayIdOf('556_[0-9%4]')).toBeNull();
  });
});

describe('reading Slurm', () => {
  it('parses squeue lines: states, reasons, host lists, start times', () => {
    expect(
      parseSqueue(
        [
          '41|PENDING|Priority||N/A|media-a',
          '42|RUNNING|None|gpu[01-04],cpu7|1795469791|media-b',
          '43|COMPLETED|None|vm|1795469800|media-c|x',
          '',
        ].join('\n'),
      ),
    ).toEqual([
      { id: '41', state: 'PENDING', reason: 'Priority', nodes: [], startedAt: null, name: 'media-a' },
      {
        id: '42',
        state: 'RUNNING',
        reason: null,
        nodes: ['gpu[01-04]', 'cpu7'],
        startedAt: 1795469791,
        name: 'media-b',
      },
      { id: '43', state: 'COMPLETED', reason: null, nodes: ['vm'], startedAt: 1795469800, name: 'media-c|x' },
    ]);
    expect(splitHostList('a[1,3-4],b,c[01-02]')).toEqual(['a[1,3-4]', 'b', 'c[01-02]']);
    expect(splitHostList('(null)')).toEqual([]);
  });

  it('parses sacct lines', () => {
    expect(parseSacct('41|CANCELLED by 0|0:15\n42|COMPLETED|0:0\n43|FAILED|3:0\n')).toEqual(
      new Map([
        ['41', { state: 'CANCELLED', exitCode: 0 }],
        ['42', { state: 'COMPLETED', exitCode: 0 }],
        ['43', { state: 'FAILED', exitCode: 3 }],
      ]),
    );
  });

  it('maps every Slurm state onto ours', () => {
    for (const s of ['PENDING', 'CONFIGURING', 'REQUEUED', 'REQUEUE_HOLD', 'RESV_DEL_HOLD'])
      expect(phaseOf(s)).toBe('pending');
    for (const s of ['RUNNING', 'COMPLETING', 'SUSPENDED']) expect(phaseOf(s)).toBe('running');
    for (const s of [
      'COMPLETED',
      'FAILED',
      'TIMEOUT',
      'CANCELLED',
      'NODE_FAIL',
      'OUT_OF_MEMORY',
      'PREEMPTED',
      'BOOT_FAIL',
      'DEADLINE',
    ])
      expect(phaseOf(s)).toBe('ended');
    expect(pendingReasonOf({ state: 'PENDING', reason: 'Resources' })).toBe('Resources');
    expect(pendingReasonOf({ state: 'PENDING', reason: null })).toBeNull();
    expect(pendingReasonOf({ state: 'CONFIGURING', reason: null })).toBe('CONFIGURING');
    expect(pendingReasonOf({ state: 'REQUEUE_HOLD', reason: 'JobHeldAdmin' })).toBe(
      'REQUEUE_HOLD: JobHeldAdmin',
    );
  });

  it.each([
    ['COMPLETED', 0, { exitCode: 0, reason: null }],
    ['COMPLETED', null, { exitCode: 0, reason: null }],
    ['FAILED', 3, { exitCode: 3, reason: null }],
    [null, 0, { exitCode: 0, reason: null }],
    [
      'FAILED',
      null,
      { detail: 'Slurm reports the job FAILED before its program could run (see the node and slurmd logs)' },
    ],
    [
      'TIMEOUT',
      null,
      { reason: 'timeout', detail: "timed out (Slurm's time limit of 2 min); its processes were stopped" },
    ],
    ['CANCELLED', null, { detail: 'canceled on the cluster, not through the service (Slurm: CANCELLED)' }],
    ['NODE_FAIL', null, { infrastructure: true, detail: 'the node running it failed (Slurm: NODE_FAIL)' }],
    ['OUT_OF_MEMORY', 137, { exitCode: 137, detail: 'it ran out of memory (Slurm: OUT_OF_MEMORY)' }],
    [
      'PREEMPTED',
      null,
      { infrastructure: true, detail: 'it was preempted by the cluster (Slurm: PREEMPTED)' },
    ],
    ['BOOT_FAIL', null, { infrastructure: true, detail: 'its node failed to boot (Slurm: BOOT_FAIL)' }],
    ['DEADLINE', null, { detail: 'it missed its deadline (Slurm: DEADLINE)' }],
    ['REVOKED', null, { detail: 'Slurm ended the job (REVOKED)' }],
    [null, null, { reason: 'lost', infrastructure: true }],
  ] as const)('ends a job that is %s with exit status %s in words', (state, exitCode, expected) => {
    const exit = exitOf(state, exitCode, null, 90);
    expect(exit).toMatchObject(expected);
    // The flag is set exactly for failures of the infrastructure.
    expect(exit.infrastructure ?? false).toBe('infrastructure' in expected);
  });

  it('ends a job the worker stopped by why it stopped it, whatever Slurm calls it', () => {
    expect(exitOf('CANCELLED', null, 'canceled', 90)).toEqual({
      exitCode: null,
      signal: null,
      reason: 'canceled',
    });
    expect(exitOf('CANCELLED', null, 'timeout', 90)).toEqual({
      exitCode: null,
      signal: null,
      reason: 'timeout',
    });
  });
});
