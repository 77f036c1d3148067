// Allocation per execution of a compiled ListMedia-like query (graphql-jit), with/without a patched runtime.
const { GraphQLSchema, GraphQLObjectType, GraphQLString, GraphQLID, GraphQLNonNull, GraphQLList, GraphQLEnumType, GraphQLInt, parse } = require('graphql');
const { compileQuery } = require('graphql-jit');
const v8 = require('node:v8');
const NN = (t) => new GraphQLNonNull(t);
const Status = new GraphQLEnumType({ name: 'MediaStatus', values: { LIVE: { value: 'live' } } });
const Type = new GraphQLEnumType({ name: 'MediaType', values: { SOURCE_ASSET: { value: 'source_asset' }, TARGET_ASSET: { value: 'target_asset' } } });
const Media = new GraphQLObjectType({ name: 'MediaAsset', fields: {
  id: { type: NN(GraphQLID) }, imageName: { type: NN(GraphQLString) }, url: { type: NN(GraphQLString) }, mediaKey: { type: NN(GraphQLString) },
  status: { type: NN(Status) }, type: { type: NN(Type) }, tags: { type: NN(new GraphQLList(NN(GraphQLString))) }, createdAt: { type: NN(GraphQLString) } } });
const Conn = new GraphQLObjectType({ name: 'Conn', fields: { nodes: { type: NN(new GraphQLList(NN(Media))) } } });
const items = Array.from({ length: 50 }, (_, i) => ({ id: 'id' + i, imageName: 'n' + i, url: 'u' + i, mediaKey: 'k' + i, status: 'live', type: 'source_asset', tags: ['tag3', 'bench'], createdAt: 't' + i }));
const schema = new GraphQLSchema({ query: new GraphQLObjectType({ name: 'Query', fields: { media: { type: NN(Conn), resolve: () => ({ nodes: items }) } } }) });
const doc = parse(`query ListMedia { media { nodes { id imageName url mediaKey status type tags createdAt } } }`, { noLocation: process.env.NOLOC === '1' });
if (process.env.PATCH) require(process.env.PATCH).installJitRuntime();
const c = compileQuery(schema, doc, 'ListMedia', { disableLeafSerialization: process.env.DISABLE === '1' });
let sink;
for (let i = 0; i < 20000; i++) sink = c.query(undefined, {}, {});
const { PerformanceObserver } = require('node:perf_hooks');
const before = v8.getHeapSpaceStatistics();
let scav = 0; new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.detail?.kind === 1 || e.kind === 1) scav++; }).observe({ entryTypes: ['gc'] });
const N = 200000;
const t0 = process.hrtime.bigint();
for (let i = 0; i < N; i++) sink = c.query(undefined, {}, {});
const ns = Number(process.hrtime.bigint() - t0);
setImmediate(() => console.log(JSON.stringify(sink.data.media.nodes[0]), 'scavenges', scav, 'semi MiB', (v8.getHeapSpaceStatistics().find(s=>s.space_name==='new_space').space_size/2/1048576).toFixed(1), 'us/op', (ns / N / 1000).toFixed(2), 'approx KB/op', (scav * v8.getHeapSpaceStatistics().find(s=>s.space_name==='new_space').space_size/2 / N / 1024).toFixed(2)));
