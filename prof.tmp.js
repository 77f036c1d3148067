const lib = require('/work/main/dist/bench/lib.js');
const autocannon = require('/work/main/node_modules/autocannon');
(async () => {
  const sut = await lib.startService();
  const auth = `Bearer ${await sut.token('lister')}`;
  await fetch(`${sut.service.url}/api/v1/media`, { headers: { authorization: auth } });
  const r = await autocannon({ url: `${sut.service.url}/api/v1/media?limit=50`, headers: { authorization: auth }, connections: 10, duration: 20 });
  console.log('req/s', r.requests.average, 'p50', r.latency.p50);
  await sut.stop();
})();
